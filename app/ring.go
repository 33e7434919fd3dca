package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"homering/app/api/apitype"
	"homering/app/node"
	"homering/discovery/identity"
	"homering/engine/profile"
	"homering/engine/profile/calib"
	"homering/engine/profile/modelprof"
	"homering/engine/profile/sysinfo"
	"homering/engine/ring"
	"homering/engine/ring/wire"
	"homering/engine/runner"
	"homering/halda"
	"homering/halda/lpsolve"
)

// The ring side of the chat backend: the head plans across paired devices
// and runs the ring on its runner child; a worker serves a head's job on its
// own runner child (app/node asks through the Worker interface).

// askTimeout bounds one control exchange with a peer (profile or job).
const askTimeout = 5 * time.Second

// ringMemory is what the head remembers of its last ring, for status, the
// device map and adopting a new plan only on a clear gain (ring.Adopt).
type ringMemory struct {
	mu     sync.Mutex
	nextID uint64
	key    string     // model and options the last plan was made for
	plan   halda.Plan // the last plan installed at the start of a request
	last   *apitype.RingRun
	model  string
	at     time.Time
	note   string // why the last chat ran on this device alone
	// alone is the last single-device chat's predictions beside its
	// measurement (app/profile_calib.go).
	alone *apitype.SelfRun

	calibOnce sync.Once
	ratios    *calibStore      // the devices' calibration ratios; calibration()
	links     calib.Calibrator // this device's link times to its peers
}

// attach wires the backend to the node: problems show in its status, ring
// jobs reach the runner, and the head asks peers through it.
func (b *chatBackend) attach(n *node.Node) {
	b.problems = n
	b.node = n
	n.SetWorker(b)
	b.watchContribute(n) // contributing off ends a kept ring job (chat.go)
}

// RingProfile implements node.Worker: the newest valid cached profile of
// this device (homering profile), else a quick default.
func (b *chatBackend) RingProfile() (halda.Device, bool) {
	b.prof.Touch() // a head is planning with this device: no background measurement now
	return b.selfDevice()
}

// selfDevice is this device's newest valid cached profile, else a quick
// default (measured false).
func (b *chatBackend) selfDevice() (halda.Device, bool) {
	if p, ok, err := profile.LoadCached(b.dir); err == nil && ok {
		return p.Device(""), true
	}
	return quickProfile(), false
}

// ServeRing implements node.Worker: the runner child listens for the head.
func (b *chatBackend) ServeRing(ctx context.Context, allowed []string) (string, error) {
	b.prof.Touch() // a job is coming: no background measurement now
	return b.sup.ServeRing(ctx, runner.ServeParams{
		Identity: b.dir, Allowed: allowed, CacheDir: filepath.Join(b.dir, "cache", "slices"), Threads: b.threads,
	})
}

// quickProfile is this device before the profiler measured it, with its
// memory as the OS counts it now.
func quickProfile() halda.Device {
	if mem, err := sysinfo.ReadMemory(); err == nil && mem.Total > 0 {
		return profile.Unmeasured("", mem.Available, mem.Total)
	}
	return profile.Unmeasured("", 8<<30, 16<<30)
}

// ringJob is a plan being run: the problem it was solved from (to re-plan
// without lost devices) and what the runner needs.
type ringJob struct {
	problem  halda.Problem
	plan     halda.Plan
	params   runner.RingParams
	addrs    map[string]string // worker ID → ring address
	profiles map[string]node.PeerProfile
	names    map[string]apitype.Peer
	self     apitype.Device
	selfProf bool // this device's profile was measured
	lost     []string
	model    string
	path     string                  // the model file (calibration key)
	raw      map[string]halda.Device // uncalibrated profiles by device
	rawMs    float64                 // Halda's uncalibrated prediction per token
}

// planRing decides where a request runs. It returns nil and a note when
// this device runs it alone: no peers, none reachable, or Halda keeps the
// model on the head.
func (b *chatBackend) planRing(ctx context.Context, path string, nCtx int, req apitype.ChatRequest) (*ringJob, string) {
	if b.node == nil {
		return nil, ""
	}
	forced := req.Devices == "all"
	var cands []apitype.Peer
	for _, p := range b.node.Peers().Peers {
		if p.Paired && p.Contribute && p.Visible && !p.Conflict {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return nil, "no paired, contributing device is visible"
	}
	m, err := modelprof.FromGGUF(path, nCtx)
	if err != nil {
		return nil, fmt.Sprintf("the model's shape cannot be read: %v", err)
	}
	hiddenBytes := 4 * m.Embedding // one F32 hidden state, as the ring sends
	job := &ringJob{profiles: map[string]node.PeerProfile{}, names: map[string]apitype.Peer{}, addrs: map[string]string{},
		self: b.node.Status().Device, model: filepath.Base(path)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range cands {
		wg.Add(1)
		go func() {
			defer wg.Done()
			actx, cancel := context.WithTimeout(ctx, askTimeout)
			defer cancel()
			pp, err := b.node.AskProfileHidden(actx, p.ID, hiddenBytes)
			if err != nil {
				b.log.Info("ring: peer left out of the plan", "peer", p.Short, "err", err)
				return
			}
			mu.Lock()
			job.profiles[p.ID], job.names[p.ID] = pp, p
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(job.profiles) == 0 {
		return nil, "no paired device answered"
	}
	self, measured := b.selfDevice()
	self.Name, job.selfProf = job.self.ID, measured
	self.LinkSec = map[string]float64{}
	devs := []halda.Device{self}
	maxLink := 0.0
	for _, id := range slices.Sorted(maps.Keys(job.profiles)) {
		pp := job.profiles[id]
		// One-way: a hidden state there (the pong brings it back); the
		// rolling median of the last plans' measurements (calib.Link), so
		// one slow ping does not move the ring.
		link := b.linkMedian(id, pp.HiddenRTT.Seconds()/2)
		maxLink = max(maxLink, link)
		self.LinkSec[id] = link
		d := pp.Device
		d.LinkSec = map[string]float64{job.self.ID: link}
		devs = append(devs, d)
	}
	job.problem = halda.Problem{Devices: devs, Model: m, DefaultLinkSec: max(maxLink, 1e-4),
		KeepAllDevices: forced, HeadHoldsLayers: true, Rounds: req.Rounds}
	// Plan with the devices calibrated by earlier runs' measurements
	// (app/profile_calib.go); the uncalibrated ones stay for the next ratio.
	job.raw = map[string]halda.Device{}
	for _, d := range devs {
		job.raw[d.Name] = d
	}
	var rawPlan halda.Plan
	job.problem, rawPlan = b.calibrated(job.problem, path)
	job.rawMs, job.path = rawPlan.PredictedMs, path
	key := fmt.Sprint(path, nCtx, req.Devices, req.Rounds)
	for range len(devs) {
		plan, err := halda.Solve(job.problem, lpsolve.Solver{})
		if err != nil {
			return nil, fmt.Sprintf("Halda found no ring plan: %v", err)
		}
		plan = b.adopt(key, job.problem, plan)
		if len(plan.Ring) == 1 {
			return nil, fmt.Sprintf("Halda keeps the model on this device (predicted %.2f ms per token)", plan.PredictedMs)
		}
		failed := b.askJobs(ctx, job, plan)
		if len(failed) == 0 {
			job.plan = plan
			wp, err := b.wirePlan(plan, m.Embedding)
			if err != nil {
				return nil, err.Error()
			}
			job.params = runner.RingParams{Plan: wp, Identity: b.dir, NoPrefetch: req.NoPrefetch}
			for _, a := range plan.Ring[1:] {
				job.params.Peers = append(job.params.Peers, runner.RingPeer{ID: a.Device, Addr: job.addrs[a.Device]})
			}
			b.ring.mu.Lock()
			b.ring.key, b.ring.plan = key, plan
			b.ring.mu.Unlock()
			return job, ""
		}
		job.problem.Devices = slices.DeleteFunc(job.problem.Devices, func(d halda.Device) bool { return slices.Contains(failed, d.Name) })
	}
	return nil, "no device would serve the ring"
}

// adopt keeps the last plan for the same model and options while its
// devices are all still there and the new one is no clear gain, both
// scored with this request's profiles: a device that joins is used from
// the next request only when worth a re-prefill, and the runner's kept job
// (ring_keep_seconds, Chat), whose plan must not change, serves the
// conversation's next turn. When every device is asked for, the last plan
// is kept only if it has every device.
func (b *chatBackend) adopt(key string, p halda.Problem, plan halda.Plan) halda.Plan {
	b.ring.mu.Lock()
	defer b.ring.mu.Unlock()
	if b.ring.key != key || len(b.ring.plan.Ring) == 0 {
		return plan // nothing to keep
	}
	if p.KeepAllDevices && len(b.ring.plan.Ring) != len(p.Devices) {
		return plan // every device was asked for, and the last plan lacks some
	}
	for _, a := range b.ring.plan.Ring {
		if !slices.ContainsFunc(p.Devices, func(d halda.Device) bool { return d.Name == a.Device }) {
			return plan // a device of the last plan is gone
		}
	}
	// The last plan's prediction was made with the profiles of then:
	// score it again with this request's (calibration moves them after
	// every chat) so that the two compare alike. Else a ring whose plan
	// only ties (three devices in either order) would be re-planned, its
	// kept job dropped, whenever calibration made the new prediction lower.
	last, err := halda.Rescore(p, b.ring.plan)
	if err != nil || ring.Adopt(last.PredictedMs, plan.PredictedMs) {
		return plan
	}
	return last
}

func (b *chatBackend) wirePlan(plan halda.Plan, nEmbd int) (*wire.Plan, error) {
	b.ring.mu.Lock()
	if b.ring.nextID == 0 {
		b.ring.nextID = uint64(time.Now().UnixNano())
	}
	b.ring.nextID++
	id := b.ring.nextID
	b.ring.mu.Unlock()
	return ring.FromHalda(id, plan, nEmbd)
}

// askJobs asks every worker of plan to serve and records their addresses;
// it returns the workers that refused or did not answer.
func (b *chatBackend) askJobs(ctx context.Context, job *ringJob, plan halda.Plan) []string {
	var mu sync.Mutex
	var failed []string
	var wg sync.WaitGroup
	for _, a := range plan.Ring[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			actx, cancel := context.WithTimeout(ctx, askTimeout)
			defer cancel()
			addr, err := b.node.AskJob(actx, a.Device, node.JobAsk{Model: job.model})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				b.log.Info("ring: worker will not serve; planning without it", "peer", shortID(a.Device), "err", err)
				failed = append(failed, a.Device)
				return
			}
			job.addrs[a.Device] = addr
		}()
	}
	wg.Wait()
	return failed
}

// replan is the runner's callback after losing workers: Halda again
// without them, every remaining worker asked to serve again.
func (b *chatBackend) replan(job *ringJob) func(ctx context.Context, without []string) (runner.RingParams, error) {
	return func(ctx context.Context, without []string) (runner.RingParams, error) {
		start := time.Now()
		for _, id := range without {
			if !slices.Contains(job.lost, id) {
				job.lost = append(job.lost, id)
			}
		}
		p := job.problem
		p.Devices = slices.DeleteFunc(slices.Clone(p.Devices), func(d halda.Device) bool { return slices.Contains(job.lost, d.Name) })
		if p.Rounds > 0 && len(p.Devices) > p.Model.Layers/p.Rounds {
			p.Rounds = 0
		}
		for range len(p.Devices) {
			plan, err := halda.Solve(p, lpsolve.Solver{})
			if err != nil {
				return runner.RingParams{}, fmt.Errorf("no plan without %s: %w", strings.Join(shortIDs(without), ", "), err)
			}
			failed := b.askJobs(ctx, job, plan)
			if len(failed) > 0 {
				job.lost = append(job.lost, failed...)
				p.Devices = slices.DeleteFunc(p.Devices, func(d halda.Device) bool { return slices.Contains(failed, d.Name) })
				continue
			}
			wp, err := b.wirePlan(plan, p.Model.Embedding)
			if err != nil {
				return runner.RingParams{}, err
			}
			rp := runner.RingParams{Plan: wp, Identity: b.dir, NoPrefetch: job.params.NoPrefetch}
			for _, a := range plan.Ring[1:] {
				rp.Peers = append(rp.Peers, runner.RingPeer{ID: a.Device, Addr: job.addrs[a.Device]})
			}
			job.problem, job.plan, job.params = p, plan, rp
			b.log.Info("ring: re-planned without lost devices", "lost", strings.Join(shortIDs(without), ","),
				"devices", len(plan.Ring), "k", plan.K, "took", time.Since(start).Round(time.Millisecond))
			return rp, nil
		}
		return runner.RingParams{}, errors.New("no device would serve the ring any more")
	}
}

// ringRun describes the finished generation for stats, status and the map.
func (b *chatBackend) ringRun(job *ringJob, st runner.Stats) *apitype.RingRun {
	r := &apitype.RingRun{K: job.plan.K, Layers: job.problem.Model.Layers, PredictedMs: job.plan.PredictedMs, UncalibratedMs: job.rawMs,
		Replans: st.Replans, Lost: append([]string{}, job.lost...), LossToTokenMs: st.LossToTokenMS, Devices: []apitype.RingDevice{}}
	if job.params.Plan != nil {
		r.PlanID = job.params.Plan.ID
	}
	if st.DecodeTokens > 0 {
		r.MeasuredMs = st.DecodeMS / float64(st.DecodeTokens)
	}
	measured := map[string]runner.DeviceStats{}
	for _, d := range st.Devices {
		measured[d.ID] = d
	}
	for i, a := range job.plan.Ring {
		d := apitype.RingDevice{ID: a.Device, Short: shortID(a.Device), Case: string(a.Case), PredictedMs: a.PredictedMs,
			Windows: []apitype.Window{}, Profile: "default"}
		for _, l := range a.Layers {
			d.Windows = append(d.Windows, apitype.Window{Start: l.Start, End: l.End, GPU: min(a.N, l.End-l.Start)})
		}
		if i == 0 {
			d.Name = job.self.Name
			if job.selfProf {
				d.Profile = "measured"
			}
		} else {
			d.Name = job.names[a.Device].Name
			if pp, ok := job.profiles[a.Device]; ok {
				ms := float64(pp.RTT) / float64(time.Millisecond)
				d.RTTMs = &ms
				if pp.Measured {
					d.Profile = "measured"
				}
			}
		}
		if m, ok := measured[a.Device]; ok {
			d.MeasuredMs, d.MemPressure = m.ComputeMS, m.MemPressure
		}
		if raw, ok := job.raw[a.Device]; ok {
			var cal halda.Device
			for _, c := range job.problem.Devices {
				if c.Name == a.Device {
					cal = c
				}
			}
			unc := calib.Uncalibrated(a, raw, cal)
			d.UncalibratedMs = a.PredictedMs - a.ComputeMs - a.DiskMs + unc
			if d.MeasuredMs > 0 {
				b.learn(a.Device, job.path, d.MeasuredMs, unc)
			}
		}
		r.Devices = append(r.Devices, d)
	}
	return r
}

// RingStatus is GET /api/v1/ring (app/api/ring.go).
func (b *chatBackend) RingStatus() apitype.RingStatus {
	b.ring.mu.Lock()
	defer b.ring.mu.Unlock()
	s := apitype.RingStatus{Model: b.ring.model, Last: b.ring.last, Note: b.ring.note, Self: b.ring.alone}
	if !b.ring.at.IsZero() {
		at := b.ring.at
		s.At = &at
	}
	return s
}

func (b *chatBackend) remember(model string, run *apitype.RingRun, note string) {
	b.ring.mu.Lock()
	defer b.ring.mu.Unlock()
	b.ring.note = note
	if run != nil {
		b.ring.model, b.ring.last, b.ring.at = model, run, time.Now()
	}
}

// shortID is a device ID's short form (identity.DeviceID.Short), or the
// string itself when it is no device ID.
func shortID(id string) string {
	if d, err := identity.ParseDeviceID(id); err == nil {
		return d.Short()
	}
	return id
}

func shortIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = shortID(id)
	}
	return out
}
