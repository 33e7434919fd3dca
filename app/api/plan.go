package api

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"homering/app/api/apitype"
	"homering/engine/profile/modelprof"
	"homering/halda"
	"homering/halda/lpsolve"
)

// defaultLinkSec is charged for a link not measured yet: one hidden state
// over a home LAN (about 1 ms).
const defaultLinkSec = 1e-3

// defaultProfile is the profile used for a device until the profiler has
// measured it: a modest 4-core laptop CPU (no GPU), with the memory this
// device reads from /proc/meminfo (peers are assumed alike until they
// report their own).
func defaultProfile(name string, avail, total, budget int64) halda.Device {
	cores := float64(max(runtime.NumCPU(), 1))
	flops := 5e9 * cores // per core, quantized matmul-vector on AVX2
	return halda.Device{
		Name: name, OS: halda.Linux,
		CPUFlops: map[string]float64{"f32": flops / 2, "f16": flops / 2, "bf16": flops / 2, "q8_0": flops, "q4_0": flops,
			"q4_k": flops, "q5_k": flops, "q6_k": flops},
		CPUReadBytesPerSec:  10e9,
		RAMAvailable:        avail,
		RAMTotal:            total,
		MemoryBudget:        budget,
		DiskSeqBytesPerSec:  1e9,
		DiskRandBytesPerSec: 200e6,
	}
}

// planMemo caches the last plan; Solve runs again only when its inputs
// change (devices, model, context, budget), not on every heartbeat.
type planMemo struct {
	key  string
	plan halda.Plan
	m    halda.Model
	err  error
}

// member is a device the plan may use, with its API identity.
type member struct {
	id, short, name string
	self            bool
}

// devices returns the profiles of this device and of every visible,
// contributing, paired peer, in that order, named by short ID.
func (u *ui) devices(set *settingsFile) ([]halda.Device, []member) {
	hist := u.mem.sample(time.Now())
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
		budget := int64(0)
		if m.self {
			budget = set.MemoryBudget // the budget is this device's own setting
		}
		devs[i] = defaultProfile(m.short, avail, total, budget)
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
	for i, d := range all {
		byShort[d.Short] = i
		if !d.Self && d.Paired && d.Visible && d.Contribute {
			all[i].RTTMs = u.rtt.get(d.ID, time.Now())
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
	key := fmt.Sprint(set.Model, set.ContextTokens, set.MemoryBudget, len(devs), ms)
	u.mu.Lock()
	memo := u.planMemo
	u.mu.Unlock()
	if memo.key != key {
		memo = planMemo{key: key}
		memo.m, memo.err = modelFromGGUF(set.Model, set.ContextTokens)
		if memo.err == nil {
			memo.plan, memo.err = halda.Solve(halda.Problem{Devices: devs, Model: memo.m, DefaultLinkSec: defaultLinkSec}, lpsolve.Solver{})
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
		out.Devices = all
		return out, nil
	}
	out.K, out.PredictedMs = memo.plan.K, memo.plan.PredictedMs
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
