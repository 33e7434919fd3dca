package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/app/node"
	"homering/app/planner"
	"homering/discovery/identity"
	"homering/engine/profile"
	"homering/engine/profile/calib"
	"homering/engine/profile/sysinfo"
	"homering/engine/ring"
	"homering/engine/ring/wire"
	"homering/engine/runner"
	"homering/halda"
)

// The ring side of the agent: the head plans across paired devices
// and runs the ring on its runner child; a worker serves a head's job on its
// own runner child (app/node asks through the Worker interface).

// askTimeout bounds one control exchange with a peer (a job; a profile
// look is the planner's).
const askTimeout = planner.AskTimeout

// ringMemory is what the head remembers of its last ring, for status and
// the device map. Plans and what they were made from are the planner's
// (app/planner).
type ringMemory struct {
	mu     sync.Mutex
	nextID uint64
	last   *apitype.RingRun
	model  string
	at     time.Time
	note   string // why the last chat ran on this device alone
	// alone is the last single-device chat's predictions beside its
	// measurement (profile_calib.go).
	alone *apitype.SelfRun

	calibOnce sync.Once
	ratios    *calibStore // the devices' calibration ratios; calibration()
	// modelIDs memoizes each model file's header hash (routing.go).
	modelIDs map[string][32]byte

	// kept is the ring job the engine keeps for the next turn (zero when
	// none): a turn whose plan is the same reuses its workers' addresses
	// instead of asking each again, a round trip per worker.
	kept keptJob
}

// keptJob is what a head remembers of the ring job its engine keeps.
type keptJob struct {
	plan  halda.Plan
	addrs map[identity.DeviceID]string // worker → ring address
	until time.Time                    // the engine ends the job by then
}

// keep records the job just run as kept for keep, or forgets any (keep 0:
// the engine does not keep it).
func (b *Agent) keep(job *ringJob, keep time.Duration) {
	b.ring.mu.Lock()
	defer b.ring.mu.Unlock()
	b.ring.kept = keptJob{}
	if job != nil && keep > 0 {
		b.ring.kept = keptJob{plan: job.pl.Plan, addrs: maps.Clone(job.addrs), until: time.Now().Add(keep)}
	}
}

// keptAddrs returns the workers' addresses of the kept job when plan is
// its plan (same devices, order, windows) and it is still kept.
func (b *Agent) keptAddrs(plan halda.Plan) (map[identity.DeviceID]string, bool) {
	b.ring.mu.Lock()
	defer b.ring.mu.Unlock()
	k := b.ring.kept
	if k.addrs == nil || time.Now().After(k.until) || !sameRing(k.plan, plan) {
		return nil, false
	}
	for _, a := range plan.Ring[1:] {
		if k.addrs[a.ID] == "" {
			return nil, false
		}
	}
	return maps.Clone(k.addrs), true
}

// sameRing reports whether two plans run the same windows on the same
// devices in the same order: the engine's kept job can serve either.
func sameRing(a, b halda.Plan) bool {
	if a.K != b.K || len(a.Ring) != len(b.Ring) {
		return false
	}
	for i := range a.Ring {
		x, y := a.Ring[i], b.Ring[i]
		if x.Device != y.Device || x.N != y.N || !slices.Equal(x.Layers, y.Layers) {
			return false
		}
	}
	return true
}

// plans is the agent's planner (New makes it; an Agent built in a test
// without New gets one for this device alone).
func (b *Agent) plans() *planner.Planner {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.planner == nil {
		b.planner = b.newPlanner(nil)
	}
	return b.planner
}

// newPlanner is the agent's one planner (app/planner) over this agent's
// profile, settings and calibration; n nil plans for this device alone.
func (b *Agent) newPlanner(n *node.Node) *planner.Planner {
	self := b.cachedSelf()
	o := planner.Options{Settings: b.settings, Ratios: b.calibrationRatios, Log: b.log.With("component", "planner"), Memory: b.plannerMemory,
		Routing: b.measuredRouting,
		Self: func() (halda.Device, bool) {
			d, ok := self()
			return b.withEngineMemory(d), ok
		}}
	if b.ratios != nil {
		o.Ratios = b.ratios
	}
	if n != nil {
		o.Node = n
	}
	return planner.New(o)
}

// RingProfile implements node.Worker: this device's profile as the planner
// plans with it (the newest valid cached profile, else a quick default),
// with what its engine child holds counted as available (withEngineMemory:
// the head's job replaces it), the memory budget set on this device, which a head honours, and no
// GPU when its gpu setting is off. Heads
// ask it every planner.LookEvery in the background, so it does not hold
// back this device's own measurement (a job ask does: ServeRing).
func (b *Agent) RingProfile() (halda.Device, bool) {
	d, measured := b.selfDevice()
	d = b.withEngineMemory(d)
	set := b.settings()
	d.MemoryBudget = set.MemoryBudget
	if !set.UseGPU() {
		d = planner.WithoutGPU(d) // its runner loads no GPU backend: heads plan none
	}
	return d, measured
}

// selfDevice is this device's newest valid cached profile, else a quick
// default (measured false).
func (b *Agent) selfDevice() (halda.Device, bool) {
	if d, ok := b.cachedSelf()(); ok {
		return d, true
	}
	return quickProfile(), false
}

// cachedSelf is the one reader of this device's cached profile, shared by
// the planner and the answers to heads' looks (every planner.LookEvery per
// head): it reads the cache again only when the cache directory changed.
func (b *Agent) cachedSelf() func() (halda.Device, bool) {
	b.selfOnce.Do(func() { b.self = planner.CachedSelf(b.dir, b.loadProfile, b.log) })
	return b.self
}

// ServeRing implements node.Worker: the runner child listens for the head.
func (b *Agent) ServeRing(ctx context.Context, allowed []identity.DeviceID) (string, error) {
	b.prof.Touch() // a job is coming: no background measurement now
	cache, err := config.CacheDir(os.Getenv)
	if err != nil {
		return "", err
	}
	addr, err := b.sup.ServeRing(ctx, runner.ServeParams{
		Identity: b.dir, Allowed: allowed, CacheDir: filepath.Join(cache, "slices"), Threads: b.threads,
	})
	if errors.Is(err, runner.ErrBusy) {
		// Said at once to the asking head, which plans without this device.
		return "", errors.New("this device is answering a chat of its own; it can take layers once that reply ends")
	}
	return addr, err
}

// quickProfile is this device before the profiler measured it, with its
// memory as the OS counts it now.
func quickProfile() halda.Device {
	if mem, err := sysinfo.ReadMemory(); err == nil && mem.Total > 0 {
		return profile.Unmeasured("", mem.Available, mem.Total)
	}
	return profile.Unmeasured("", 8<<30, 16<<30)
}

// ringJob is a plan being run: the planner's plan and what the runner
// needs (the plan's calibrated problem among it: the runner re-plans from
// it after a loss, and its done event's stats say how).
type ringJob struct {
	pl     planner.Plan
	reused bool // the workers' addresses are the kept job's, not asked again
	params runner.RingParams
	addrs  map[identity.DeviceID]string // worker → ring address
	names  map[identity.DeviceID]apitype.Peer
	self   apitype.Device
	lost   []identity.DeviceID
	model  string
}

// planRing decides where a request runs. It returns nil and a note when
// this device runs it alone: no peers, none reachable, or Halda keeps the
// model on the head. The plan is the planner's (the device map shows the
// same one); only peers never looked at yet are looked at first (the
// planner's Run keeps the others fresh in the background). A plan that is the kept job's takes its workers'
// addresses without asking them, unless ask.
func (b *Agent) planRing(ctx context.Context, path string, nCtx int, req apitype.ChatRequest, reserve int64, ask bool) (*ringJob, string) {
	if b.node == nil {
		return nil, ""
	}
	cands := b.plans().Candidates()
	if len(cands) == 0 {
		return nil, "no paired, contributing device is visible"
	}
	preq := planner.Request{Model: path, ContextTokens: nCtx, AllDevices: req.Devices == "all", Rounds: req.Rounds, HeadReserve: reserve}
	b.plans().Refresh(ctx, preq)
	job := &ringJob{names: map[identity.DeviceID]apitype.Peer{}, addrs: map[identity.DeviceID]string{}, self: b.node.Status().Device, model: filepath.Base(path)}
	for _, c := range cands {
		job.names[c.ID] = c
	}
	for i := range len(cands) + 1 {
		pl, err := b.plans().Next(preq)
		var me *planner.ModelError
		switch {
		case errors.As(err, &me):
			return nil, fmt.Sprintf("the model's shape cannot be read: %v", err)
		case err != nil:
			return nil, fmt.Sprintf("Halda found no ring plan: %v", err)
		case len(pl.Peers) == 0 && i == 0:
			return nil, "no paired device answered"
		case len(pl.Peers) == 0:
			return nil, "no device would serve the ring"
		case len(pl.Plan.Ring) == 1:
			return nil, fmt.Sprintf("Halda keeps the model on this device (predicted %.2f ms per token)", pl.Plan.PredictedMs)
		}
		if addrs, ok := b.keptAddrs(pl.Plan); ok && !ask {
			job.addrs, job.reused = addrs, true
		} else if failed := b.askJobs(ctx, job, pl.Plan); len(failed) > 0 {
			preq.Exclude = append(preq.Exclude, failed...)
			continue
		}
		wp, err := b.wirePlan(pl.Plan, pl.Model.Embedding)
		if err != nil {
			return nil, err.Error()
		}
		job.pl = pl
		job.params = runner.RingParams{Plan: wp, Problem: &pl.Problem, Identity: b.dir, NoPrefetch: req.NoPrefetch, Streams: pl.Plan.Streams}
		for _, a := range pl.Plan.Ring[1:] {
			job.params.Peers = append(job.params.Peers, runner.RingPeer{ID: a.ID, Addr: job.addrs[a.ID]})
		}
		b.plans().Install(pl)
		return job, ""
	}
	return nil, "no device would serve the ring"
}

func (b *Agent) wirePlan(plan halda.Plan, nEmbd int) (*wire.Plan, error) {
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
func (b *Agent) askJobs(ctx context.Context, job *ringJob, plan halda.Plan) []identity.DeviceID {
	var mu sync.Mutex
	var failed []identity.DeviceID
	var wg sync.WaitGroup
	for _, a := range plan.Ring[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			actx, cancel := context.WithTimeout(ctx, askTimeout)
			defer cancel()
			addr, err := b.node.AskJob(actx, a.ID, node.JobAsk{Model: job.model})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				b.log.Info("ring: worker will not serve; planning without it", "peer", a.ID.Short(), "err", err)
				failed = append(failed, a.ID)
				return
			}
			job.addrs[a.ID] = addr
		}()
	}
	wg.Wait()
	return failed
}

// replanned takes in what the runner's stats say of a loss: the devices
// it lost and the plan it re-planned without them (ring.PlanWithout, in the
// engine child), which finished the reply and is the one a kept job runs.
func (b *Agent) replanned(job *ringJob, st runner.Stats) {
	if st.Plan == nil {
		return
	}
	job.lost, job.pl.Plan = slices.Clone(st.Lost), *st.Plan
	b.log.Info("ring: re-planned without lost devices", "lost", strings.Join(shortIDs(st.Lost), ","),
		"devices", len(st.Plan.Ring), "k", st.Plan.K, "loss_to_token_ms", st.LossToTokenMS)
}

// ringRun describes the finished generation for stats, status and the map.
func (b *Agent) ringRun(job *ringJob, st runner.Stats) *apitype.RingRun {
	pl := job.pl
	r := &apitype.RingRun{K: pl.Plan.K, Layers: pl.Model.Layers, Streams: max(pl.Plan.Streams, 1), PredictedMs: pl.Plan.PredictedMs, UncalibratedMs: pl.Raw.PredictedMs,
		Replans: st.Replans, Lost: append([]identity.DeviceID{}, job.lost...), LossToTokenMs: st.LossToTokenMS, Devices: []apitype.RingDevice{}}
	r.PlanID = st.PlanID
	if t := st.Trace; t != nil {
		r.Trace = &apitype.RingTrace{DialMs: t.DialMS, PrepareMs: t.PrepareMS, PromptMs: t.PromptMS, PromptPasses: t.PromptPasses, MicroRows: t.MicroRows}
	}
	if st.DecodeTokens > 0 {
		r.MeasuredMs = st.DecodeMS / float64(st.DecodeTokens)
	}
	measured := map[identity.DeviceID]runner.DeviceStats{}
	for _, d := range st.Devices {
		measured[d.ID] = d
	}
	for i, a := range pl.Plan.Ring {
		d := apitype.RingDevice{ID: a.ID, Short: a.ID.Short(), Case: string(a.Case), PredictedMs: a.PredictedMs,
			Windows: []apitype.Window{}, Profile: "default"}
		for _, l := range a.Layers {
			d.Windows = append(d.Windows, apitype.Window{Start: l.Start, End: l.End, GPU: min(a.N, l.End-l.Start)})
		}
		if i == 0 {
			d.Name = job.self.Name
			if pl.Self.Measured {
				d.Profile = "measured"
			}
		} else {
			d.Name = job.names[a.ID].Name
			if pp, ok := pl.Peers[a.ID]; ok {
				ms := float64(pp.RTT) / float64(time.Millisecond)
				d.RTTMs = &ms
				if pp.Measured {
					d.Profile = "measured"
				}
			}
		}
		if m, ok := measured[a.ID]; ok {
			d.MeasuredMs, d.MemPressure = m.ComputeMS, m.MemPressure
			d.PromptMs, d.Prompts = m.PromptMS, m.Prompts
		}
		d.VRAMBytes = a.VRAMBytes
		d.GPU, d.VRAMFreeBytes = planner.GPUOf(pl.RawDevices[a.Device])
		if m, ok := measured[a.ID]; ok && m.VRAMUsed > 0 {
			d.VRAMUsedBytes, d.VRAMFreeBytes = m.VRAMUsed, m.VRAMFree
		}
		d.GPUName = pl.RawDevices[a.Device].GPUName
		if raw, ok := pl.RawDevices[a.Device]; ok {
			var cal halda.Device
			for _, c := range pl.Problem.Devices {
				if c.Name == a.Device {
					cal = c
				}
			}
			unc := calib.Uncalibrated(a, raw, cal)
			d.UncalibratedMs = a.PredictedMs - a.ComputeMs - a.DiskMs + unc
			if d.MeasuredMs > 0 {
				b.learn(a.Device, pl.ModelPath, d.MeasuredMs, unc)
			}
		}
		r.Devices = append(r.Devices, d)
	}
	return r
}

// RingStatus is GET /api/v1/ring (app/api/ring.go).
func (b *Agent) RingStatus() apitype.RingStatus {
	b.ring.mu.Lock()
	defer b.ring.mu.Unlock()
	s := apitype.RingStatus{Model: b.ring.model, Last: b.ring.last, Note: b.ring.note, Self: b.ring.alone}
	if !b.ring.at.IsZero() {
		at := b.ring.at
		s.At = &at
	}
	return s
}

func (b *Agent) remember(model string, run *apitype.RingRun, note string) {
	b.ring.mu.Lock()
	defer b.ring.mu.Unlock()
	b.ring.note = note
	if run != nil {
		b.ring.model, b.ring.last, b.ring.at = model, run, time.Now()
	}
}

func shortIDs(ids []identity.DeviceID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.Short()
	}
	return out
}
