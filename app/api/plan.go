package api

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"homering/app/api/apitype"
	"homering/engine/profile"
	"homering/engine/profile/calib"
	"homering/engine/profile/modelprof"
	"homering/halda"
	"homering/halda/lpsolve"
)

// defaultLinkSec is charged for a link not measured yet: one hidden state
// over a home LAN (about 1 ms).
const defaultLinkSec = 1e-3

// defaultProfile is the profile used for a device until the profiler has
// measured it (profile.Unmeasured), with the memory this device reads from
// /proc/meminfo (peers are assumed alike until they answer with their own).
func defaultProfile(name string, avail, total, budget int64) halda.Device {
	d := profile.Unmeasured(name, avail, total)
	d.MemoryBudget = budget
	return d
}

// planMemo caches the last plan; Solve runs again only when its inputs
// change (devices, model, context, budget), not on every heartbeat.
type planMemo struct {
	key  string
	plan halda.Plan // calibrated when the chat backend kept ratios
	raw  halda.Plan // with the profiles as measured; zero when plan is
	m    halda.Model
	err  error
}

// CalibrationSource is implemented by a Chatter that learns from its runs
// (app/profile_calib.go): per device ID, the ratios of measured to
// predicted ms per token it kept for model. The device map plans with the
// devices calibrated by them (calib.FromRatios, Recalibrate) and shows the
// uncalibrated prediction beside.
type CalibrationSource interface {
	CalibrationRatios(model string, deviceIDs []string) map[string][]float64
}

// calibration is the chat backend's ratios by short ID for the members.
func (u *ui) calibration(model string, ms []member) map[string][]float64 {
	src, ok := u.s.backend().(CalibrationSource)
	if !ok {
		return nil
	}
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.id
	}
	byID := src.CalibrationRatios(model, ids)
	out := map[string][]float64{}
	for _, m := range ms {
		if r := byID[m.id]; len(r) > 0 {
			out[m.short] = r
		}
	}
	return out
}

// member is a device the plan may use, with its API identity.
type member struct {
	id, short, name string
	self            bool
	measured        bool   // planned with its measured profile
	profile         string // what the memo key needs to know of the profile
}

// profileEvery is how often this device's cached profile is read again (a
// background refresh by the runner may have stored a newer one).
const profileEvery = 30 * time.Second

// selfProfile is this device's cached measured profile, read at most once
// per profileEvery (reading checks every cache entry's checksum).
type selfProfile struct {
	at time.Time
	p  profile.Profile
	ok bool
}

// measuredSelf returns this device's measured profile, if the profiler has
// cached one.
func (u *ui) measuredSelf(now time.Time) (profile.Profile, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.self.at.IsZero() || now.Sub(u.self.at) >= profileEvery {
		load := u.s.LoadProfile
		if load == nil {
			load = profile.LoadCached
		}
		p, ok, err := load(u.s.Node.Status().ConfigDir)
		if err != nil {
			u.s.Log.Warn("cannot read the cached device profile; planning with a default", "err", err)
		}
		u.self = selfProfile{at: now, p: p, ok: ok && err == nil}
	}
	return u.self.p, u.self.ok
}

// withDefaults fills what a measured device lacks from the default: the
// profiler measures only the weight types of the model it was given, and
// a device that reported no RAM figures keeps this device's.
func withDefaults(d, def halda.Device) halda.Device {
	flops := make(map[string]float64, len(def.CPUFlops))
	for k, v := range def.CPUFlops {
		flops[k] = v
	}
	for k, v := range d.CPUFlops {
		if v > 0 {
			flops[k] = v
		}
	}
	d.CPUFlops = flops
	if d.RAMTotal <= 0 {
		d.RAMAvailable, d.RAMTotal = def.RAMAvailable, def.RAMTotal
	}
	if d.CPUReadBytesPerSec <= 0 {
		d.CPUReadBytesPerSec = def.CPUReadBytesPerSec
	}
	if d.DiskSeqBytesPerSec <= 0 || d.DiskRandBytesPerSec <= 0 {
		d.DiskSeqBytesPerSec, d.DiskRandBytesPerSec = def.DiskSeqBytesPerSec, def.DiskRandBytesPerSec
	}
	return d
}

// devices returns the profiles of this device and of every visible,
// contributing, paired peer, in that order, named by short ID: measured
// ones where known (this device's from engine/profile's cache, a peer's as
// it answered the last look), defaults otherwise.
func (u *ui) devices(set *settingsFile) ([]halda.Device, []member) {
	now := time.Now()
	hist := u.mem.sample(now)
	var avail, total int64 = 8 << 30, 16 << 30
	if n := len(hist); n > 0 {
		avail, total = hist[n-1].Available, hist[n-1].Total
	}
	st := u.s.Node.Status()
	ms := []member{{id: st.Device.ID, short: st.Device.Short, name: st.Device.Name, self: true}}
	for _, p := range u.s.Node.Peers().Peers {
		if p.Visible && p.Contribute && p.Paired && !p.Conflict {
			ms = append(ms, member{id: p.ID, short: p.Short, name: p.Name})
		}
	}
	devs := make([]halda.Device, len(ms))
	for i, m := range ms {
		def := defaultProfile(m.short, avail, total, 0)
		devs[i], ms[i].profile = def, "default"
		if m.self {
			if p, ok := u.measuredSelf(now); ok {
				devs[i] = withDefaults(p.Device(m.short), def)
				ms[i].measured, ms[i].profile = true, "measured "+p.Key+" "+p.MeasuredAt.String()
			}
			devs[i].MemoryBudget = set.MemoryBudget // the budget is this device's own setting
			continue
		}
		if e := u.peers.get(m.id, now); e.profile != nil {
			d := withDefaults(*e.profile, def)
			d.Name, d.MemoryBudget = m.short, 0 // a peer's own budget is applied on that device
			devs[i], ms[i].measured = d, e.measured
			ms[i].profile = fmt.Sprintf("peer %p %v", e.profile, e.measured)
		}
	}
	return devs, ms
}

func (u *ui) plan(w http.ResponseWriter, r *http.Request) {
	p, err := u.buildPlan()
	reply(w, p, err)
}

// buildPlan is the device map: Halda's plan for the devices seen and the
// selected model, with every device, paired or not.
func (u *ui) buildPlan() (apitype.Plan, error) {
	set, err := u.current()
	if err != nil {
		return apitype.Plan{}, err
	}
	devs, ms := u.devices(set)
	out := apitype.Plan{ModelPath: set.Model, Devices: []apitype.MapDevice{}, At: time.Now()}
	byShort := map[string]int{}
	st := u.s.Node.Status()
	self := apitype.MapDevice{ID: st.Device.ID, Short: st.Device.Short, Name: st.Device.Name, Self: true, Paired: true,
		Visible: true, Contribute: st.Contribute, RingIndex: -1, Role: "idle", Profile: "default", Windows: []apitype.Window{},
		Memory: u.mem.sample(time.Now())}
	all := []apitype.MapDevice{self}
	for _, p := range u.s.Node.Peers().Peers {
		all = append(all, apitype.MapDevice{ID: p.ID, Short: p.Short, Name: p.Name, Paired: p.Paired, Visible: p.Visible,
			Contribute: p.Contribute, RingIndex: -1, Role: "idle", Profile: "default", Windows: []apitype.Window{}, Memory: []apitype.MemSample{}})
	}
	measured := map[string]bool{}
	for _, m := range ms {
		measured[m.id] = m.measured
	}
	for i, d := range all {
		byShort[d.Short] = i
		if measured[d.ID] {
			all[i].Profile = "measured"
		}
		if !d.Self && d.Paired && d.Visible && d.Contribute {
			e := u.peers.get(d.ID, time.Now())
			all[i].RTTMs, all[i].Memory = e.rttMs, e.memory
			if all[i].Memory == nil {
				all[i].Memory = []apitype.MemSample{}
			}
		}
		switch {
		case d.Self:
		case !d.Visible:
			all[i].Why = "Not seen on the network now."
		case !d.Paired:
			all[i].Why = "Not paired: pair it in Settings to let it take layers."
		case !d.Contribute:
			all[i].Why = "Contribute is off on that device."
		}
	}
	if set.Model == "" {
		out.Problem = &apitype.Problem{Code: "no_model", Title: "No model chosen.", Text: "The device map shows where a model's layers would run.", Fix: "Pick a model in Models."}
		out.Devices = all
		return out, nil
	}
	ratios := u.calibration(set.Model, ms)
	key := fmt.Sprint(set.Model, set.ContextTokens, set.MemoryBudget, len(devs), ms, ratios)
	u.mu.Lock()
	memo := u.planMemo
	u.mu.Unlock()
	if memo.key != key {
		memo = planMemo{key: key}
		memo.m, memo.err = modelFromGGUF(set.Model, set.ContextTokens)
		if memo.err == nil {
			p := halda.Problem{Devices: devs, Model: memo.m, DefaultLinkSec: defaultLinkSec}
			memo.plan, memo.err = halda.Solve(p, lpsolve.Solver{})
			if cals := calib.FromRatios(memo.plan, ratios); memo.err == nil && len(cals) > 0 {
				if _, cp, err := calib.Recalibrate(p, memo.plan, cals, lpsolve.Solver{}); err == nil {
					memo.raw, memo.plan = memo.plan, cp
				}
			}
		}
		u.mu.Lock()
		u.planMemo = memo
		u.mu.Unlock()
	}
	out.Model = strings.TrimSuffix(filepath.Base(set.Model), filepath.Ext(set.Model))
	out.Layers = memo.m.Layers
	if memo.err != nil {
		out.Problem = &apitype.Problem{Code: "plan", Title: "No plan for this model on these devices.", Text: sentence(memo.err),
			Fix: "Pick a smaller model, pair and turn on more devices, or raise the memory budget."}
		if memo.m.Layers == 0 {
			// The file itself could not be read: more devices would not help.
			out.Problem = &apitype.Problem{Code: "model_unreadable", Title: "The selected model cannot be read.", Text: sentence(memo.err),
				Fix: "Choose another model in Models."}
		}
		out.Devices = all
		return out, nil
	}
	out.K, out.PredictedMs, out.UncalibratedMs = memo.plan.K, memo.plan.PredictedMs, memo.raw.PredictedMs
	var ordered []apitype.MapDevice
	for ri, a := range memo.plan.Ring {
		i, ok := byShort[a.Device]
		if !ok {
			continue
		}
		d := all[i]
		d.InRing, d.RingIndex, d.Case = true, ri, string(a.Case)
		if d.Self && len(memo.plan.Ring) == 1 {
			// Until the ring runs, chat runs here alone: its speed is this
			// plan's measurement.
			d.MeasuredMs = u.chat.measured()
		}
		d.Role = "worker"
		if ri == 0 {
			d.Role = "head"
		}
		d.PredictedMs, d.RAMBytes, d.VRAMBytes = a.PredictedMs, a.RAMBytes, a.VRAMBytes
		for _, r := range memo.raw.Ring {
			if r.Device == a.Device {
				d.UncalibratedMs = r.PredictedMs
			}
		}
		for _, l := range a.Layers {
			d.Windows = append(d.Windows, apitype.Window{Start: l.Start, End: l.End, GPU: min(a.N, l.End-l.Start)})
		}
		all[i].Short = "" // taken
		ordered = append(ordered, d)
	}
	for _, dr := range memo.plan.Dropped {
		if i, ok := byShort[dr.Device]; ok && all[i].Short != "" {
			all[i].Role, all[i].Why = "left out", sentence(errors.New(dr.Reason))
		}
	}
	for _, d := range all {
		if d.Short != "" {
			ordered = append(ordered, d)
		}
	}
	out.Devices = ordered
	return out, nil
}

// modelFromGGUF reads a GGUF's shape into halda's Model (shared with
// homering plan and the profiler).
func modelFromGGUF(path string, ctxTokens int) (halda.Model, error) {
	return modelprof.FromGGUF(path, ctxTokens)
}
