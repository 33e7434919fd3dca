package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/app/node"
	"homering/discovery/deviceid"
	"homering/engine/profile"
	"homering/engine/profile/calib"
	"homering/engine/profile/modelprof"
	"homering/engine/profile/sysinfo"
	"homering/engine/ring"
	"homering/engine/ring/wire"
	"homering/halda"
	"homering/halda/lpsolve"
)

// LookEvery is how often Run looks at each candidate peer in the
// background (over its long-lived control link: pings and a profile), so
// that a chat plans with answers this fresh and asks nobody itself.
const LookEvery = 10 * time.Second

// AskTimeout bounds one look at a peer (pings and its profile).
const AskTimeout = 5 * time.Second

// memoSize is how many solved problems are kept: the device map's, a chat's
// with other options, the model list's labels (one per model file).
const memoSize = 32

// ramSteps sets the granularity of the memory Halda plans with: the
// largest power of two at most 1/64 of the figure, and none under 1 MiB. The
// OS's available-memory figure moves by a few MB from one reading to the
// next, which must not make a plan (or its memo entry) differ.
const ramSteps = 64

// quantize rounds an available-memory figure down to its step.
func quantize(b int64) int64 {
	step := int64(1 << 20)
	if step*ramSteps > b {
		return b // under 64 MiB: every MiB counts
	}
	for step*2*ramSteps <= b {
		step *= 2
	}
	return b - b%step
}

// Node is what the planner needs of app/node: who this device is, the
// peers seen, and a look at one of them.
type Node interface {
	Status() apitype.Status
	Peers() apitype.Peers
	AskProfileHidden(ctx context.Context, peer deviceid.ID, hiddenBytes int) (node.PeerProfile, error)
}

// Options configure a Planner. Every field may be nil.
type Options struct {
	// Node: nil plans for this device alone.
	Node Node
	// Self is this device's measured profile, if any (CachedSelf); nil or
	// false: a default with the memory the OS reports (profile.Unmeasured).
	Self func() (halda.Device, bool)
	// Settings gives the selected model, context size and this device's
	// memory budget; nil: defaults (no model).
	Settings func() config.Settings
	// Ratios gives the calibration ratios kept per device ID for a model
	// file; nil: plans are not calibrated.
	Ratios func(model string, deviceIDs []string) map[string][]float64
	// Memory reads this device's available and total RAM, for defaults;
	// nil: engine/profile/sysinfo.
	Memory func() (avail, total int64)
	// Routing gives a MoE model file's measured routing histogram, every
	// layer filled (modelprof.Routing.Filled), which Halda's hot set and
	// cold rate follow; nil (or a nil answer): uniform top-k of n.
	Routing func(model string) *modelprof.Routing
	Now     func() time.Time
	Log     *slog.Logger
}

// Planner owns the agent's planning (package doc). Safe for concurrent use.
type Planner struct {
	o Options

	mu     sync.Mutex
	peers  map[deviceid.ID]*peerState // guarded by mu
	links  calib.Calibrator           // one-way hidden-state times, by halda name; guarded by mu
	memo   map[string]solved          // by problem key; guarded by mu
	order  []string                   // memo keys, oldest first
	models map[string]halda.Model
	last   installed
	count  Counters
}

// Counters say how much work planning did (tests and benchmarks).
type Counters struct {
	Solves     int // Halda solves (each may run several ILPs)
	ModelReads int // GGUF headers parsed
	Asks       int // looks at peers (each a control link with pings)
}

type peerState struct {
	at       time.Time
	ok       bool // the last look answered
	device   halda.Device
	measured bool
	rtt      time.Duration
}

type solved struct {
	raw     halda.Plan    // with the profiles as measured
	problem halda.Problem // calibrated
	plan    halda.Plan    // Halda's plan for problem
	err     error
}

type installed struct {
	key  string
	plan halda.Plan
}

// New returns a planner.
func New(o Options) *Planner {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Memory == nil {
		o.Memory = func() (int64, int64) {
			if m, err := sysinfo.ReadMemory(); err == nil && m.Total > 0 {
				return m.Available, m.Total
			}
			return 8 << 30, 16 << 30
		}
	}
	return &Planner{o: o, peers: map[deviceid.ID]*peerState{}, memo: map[string]solved{}, models: map[string]halda.Model{}}
}

// Request is what a plan is for. The zero Request is the device map's: the
// selected model, with the options a chat gets by default.
type Request struct {
	Model         string // GGUF path; "" the selected model
	ContextTokens int    // 0: the setting
	AllDevices    bool   // every device gets layers (homering chat --devices all)
	Rounds        int    // rounds per token; 0: Halda chooses
	// Exclude lists devices left out: they refused or did not answer a
	// job. The plan is still compared with the last one installed.
	Exclude []deviceid.ID
	// Shape is the model's shape when the caller read it already (the
	// model list); nil reads it from Model.
	Shape *halda.Model
	// Alone plans for this device only (calibrating a single-device chat).
	Alone bool
	// HeadReserve is memory this device keeps beyond its windows for the
	// request (a speculative draft's weights, which it reads every token):
	// the plan counts it as not available here.
	HeadReserve int64
	// Streams is the most conversations the ring job may run at once,
	// each with its own KV cache of the context on every device: Halda
	// charges them and admits as many as memory allows (halda.Plan.Streams,
	// which the job enforces). 0: DefaultStreams; an Alone plan has one.
	Streams int
}

// DefaultStreams is how many conversations a ring plan asks room for by
// default. Pipelining by stream keeps up to one device busy per stream
// (engine/ring's doc, "Streams"), and the rings of a home have 2 to 4
// devices, so streams beyond 4 add KV caches on every device but little
// speed; and 4 covers the cases issue 19 names (two people, an agent tool
// beside a chat). Halda admits fewer where their caches would cost a lone
// conversation more than halda.StreamSlowdown.
const DefaultStreams = 4

// streams is the count req asks Halda for.
func (req Request) streams() int {
	switch {
	case req.Alone:
		return 1 // a chat on this device alone takes turns (engine/head)
	case req.Streams > 0:
		return min(req.Streams, wire.MaxStreams)
	}
	return DefaultStreams
}

// Member is a device a plan was made with.
type Member struct {
	ID       deviceid.ID   // zero for this device without a node
	Measured bool          // its profile was measured, not a default
	RTT      time.Duration // its link's round trip (peers; zero for this device)
}

// Plan is a plan and what it was made from.
type Plan struct {
	// Key is the request's shape (model, context, devices, rounds): a plan
	// installed for one key is kept for the next request of that key.
	Key       string
	ModelPath string
	Model     halda.Model
	// Problem is the calibrated problem Plan was solved from; re-plans
	// after a loss start from it.
	Problem halda.Problem
	// Raw is Halda's plan with the profiles as measured (its PredictedMs
	// is the uncalibrated prediction) and RawDevices those profiles.
	Raw        halda.Plan
	RawDevices map[string]halda.Device
	Plan       halda.Plan // what runs
	Self       Member
	Peers      map[deviceid.ID]Member
}

// ModelError says the model file cannot be read: more devices would not
// help.
type ModelError struct {
	Path string
	Err  error
}

func (e *ModelError) Error() string { return e.Err.Error() }
func (e *ModelError) Unwrap() error { return e.Err }

// ErrNoModel is returned when no model is selected.
var ErrNoModel = errors.New("planner: no model is selected")

// selfID is this device's ID, zero without a node.
func (p *Planner) selfID() deviceid.ID {
	if p.o.Node != nil {
		return p.o.Node.Status().Device.ID
	}
	return deviceid.ID{}
}

// Name is what halda calls the device id in the agent's problems and plans
// (halda.Device.Name, LinkSec's keys, Assignment.Device): its ID's
// readable text, the one name unique in a household, or "self" for this
// device without a node. The one place the planner turns an ID into
// text; what runs a plan reads Assignment.ID instead.
func Name(id deviceid.ID) string {
	if id.IsZero() {
		return "self"
	}
	return id.String()
}

func (p *Planner) settings() config.Settings {
	if p.o.Settings == nil {
		return config.Settings{}
	}
	return p.o.Settings()
}

// Candidates are the peers a plan may use now: paired, contributing,
// visible and not claimed by two devices, sorted by ID.
func (p *Planner) Candidates() []apitype.Peer {
	if p.o.Node == nil {
		return nil
	}
	var out []apitype.Peer
	for _, q := range p.o.Node.Peers().Peers {
		if q.Paired && q.Contribute && q.Visible && !q.Conflict {
			out = append(out, q)
		}
	}
	slices.SortFunc(out, func(a, b apitype.Peer) int { return a.ID.Compare(b.ID) })
	return out
}

// Reachable counts the devices a plan may use now: this device and every
// candidate whose last look answered.
func (p *Planner) Reachable() int {
	cands := p.Candidates()
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 1
	for _, c := range cands {
		if st := p.peers[c.ID]; st != nil && st.ok {
			n++
		}
	}
	return n
}

// Counters returns the work done so far.
func (p *Planner) Counters() Counters {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.count
}

// modelShape reads path's shape for ctx once per file version.
func (p *Planner) modelShape(path string, ctx int) (halda.Model, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return halda.Model{}, &ModelError{Path: path, Err: err}
	}
	var r *modelprof.Routing
	if p.o.Routing != nil {
		r = p.o.Routing(path)
	}
	key := fmt.Sprint(path, "|", fi.Size(), "|", fi.ModTime().UnixNano(), "|", ctx)
	if r != nil {
		key += fmt.Sprint("|routed ", r.Picks()) // a run adds picks: a new hot set
	}
	p.mu.Lock()
	m, ok := p.models[key]
	p.mu.Unlock()
	if ok {
		return m, nil
	}
	m, err = modelprof.FromGGUFRouted(path, ctx, r)
	if err != nil && r != nil {
		// A histogram of another shape (a re-generated file under the
		// same header): uniform, as without one.
		p.o.Log.Warn("measured routing ignored", "model", path, "err", err)
		m, err = modelprof.FromGGUF(path, ctx)
	}
	if err != nil {
		return halda.Model{}, &ModelError{Path: path, Err: err}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count.ModelReads++
	if len(p.models) >= memoSize {
		clear(p.models) // model files change rarely; start afresh
	}
	p.models[key] = m
	return m, nil
}

// hiddenBytes is the size of one hidden state the ring sends for the
// request's model (F32), 0 when it cannot be read.
func (p *Planner) hiddenBytes(req Request) int {
	path, ctx := p.resolve(req)
	if path == "" {
		return 0
	}
	m, err := p.modelShape(path, ctx)
	if err != nil {
		return 0
	}
	return 4 * m.Embedding
}

func (p *Planner) resolve(req Request) (string, int) {
	set := p.settings()
	path, ctx := req.Model, req.ContextTokens
	if path == "" {
		path = set.Model
	}
	if ctx <= 0 {
		ctx = set.ContextTokens
	}
	return path, ctx
}

// Look asks one peer for its profile and times its link with pings of a
// hidden state of the selected model, and records the answer (or the
// failure) in the peer table the plans are made from.
func (p *Planner) Look(ctx context.Context, peer deviceid.ID) (node.PeerProfile, error) {
	return p.look(ctx, peer, p.hiddenBytes(Request{}))
}

func (p *Planner) look(ctx context.Context, peer deviceid.ID, hidden int) (node.PeerProfile, error) {
	if p.o.Node == nil {
		return node.PeerProfile{}, errors.New("planner: no node to reach peers")
	}
	actx, cancel := context.WithTimeout(ctx, AskTimeout)
	defer cancel()
	pp, err := p.o.Node.AskProfileHidden(actx, peer, hidden)
	now := p.o.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count.Asks++
	st := p.peers[peer]
	if st == nil {
		st = &peerState{}
		p.peers[peer] = st
	}
	st.at, st.ok = now, err == nil
	if err != nil {
		return pp, err
	}
	st.device, st.measured, st.rtt = pp.Device, pp.Measured, pp.RTT
	// One-way: a hidden state there (the pong brings it back); the rolling
	// median of the last looks (calib.Link), so one slow ping does not move
	// the ring.
	p.links.Link(Name(peer), pp.HiddenRTT.Seconds()/2)
	return pp, nil
}

// Refresh looks, in parallel, at every candidate never looked at yet (a
// device just paired or seen): a chat plans with every device it may use.
// Later looks are Run's, in the background: a chat's turn asks nobody.
func (p *Planner) Refresh(ctx context.Context, req Request) {
	var stale []deviceid.ID
	cands := p.Candidates()
	p.mu.Lock()
	for _, c := range cands {
		if p.peers[c.ID] == nil {
			stale = append(stale, c.ID)
		}
	}
	p.mu.Unlock()
	if len(stale) == 0 {
		return
	}
	hidden := p.hiddenBytes(req)
	var wg sync.WaitGroup
	for _, id := range stale {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := p.look(ctx, id, hidden); err != nil {
				p.o.Log.Info("planner: peer left out of the plan", "peer", id, "err", err)
			}
		}()
	}
	wg.Wait()
}

// LastLook is the last look at peer when it is younger than LookEvery and
// answered: the device map shows it rather than asking again.
func (p *Planner) LastLook(peer deviceid.ID) (node.PeerProfile, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.peers[peer]
	if st == nil || !st.ok || p.o.Now().Sub(st.at) >= LookEvery {
		return node.PeerProfile{}, false
	}
	return node.PeerProfile{Device: st.device, Measured: st.measured, RTT: st.rtt}, true
}

// Run keeps the peer table fresh until ctx ends: every candidate whose
// last look is LookEvery old (or that was never looked at) is looked at
// again, one look per peer at a time. The agent runs it for its life.
func (p *Planner) Run(ctx context.Context) {
	if p.o.Node == nil {
		return
	}
	var mu sync.Mutex
	busy := map[deviceid.ID]bool{}
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		hidden := -1 // read once per round, when a look is due
		now := p.o.Now()
		for _, c := range p.Candidates() {
			id := c.ID
			p.mu.Lock()
			st := p.peers[id]
			due := st == nil || now.Sub(st.at) >= LookEvery
			p.mu.Unlock()
			mu.Lock()
			if !due || busy[id] {
				mu.Unlock()
				continue
			}
			busy[id] = true
			mu.Unlock()
			if hidden < 0 {
				hidden = p.hiddenBytes(Request{})
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := p.look(ctx, id, hidden); err != nil && ctx.Err() == nil {
					p.o.Log.Debug("planner: a look at a peer failed; plans leave it out until one answers", "peer", c.Short, "err", err)
				}
				mu.Lock()
				delete(busy, id)
				mu.Unlock()
			}()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// withDefaults fills what a profile lacks from def: the profiler measures
// only the weight types of the model it was given, and a device that
// reported no RAM figures is taken to have this device's.
func withDefaults(d, def halda.Device) halda.Device {
	flops := maps.Clone(def.CPUFlops)
	if flops == nil {
		flops = map[string]float64{}
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
	d.RAMAvailable = quantize(d.RAMAvailable)
	return d
}

// devices are this device and every candidate with an answered look, in
// that order (peers by ID), with their link times.
func (p *Planner) devices(req Request) ([]halda.Device, Member, map[deviceid.ID]Member, float64) {
	avail, total := p.o.Memory()
	selfID := p.selfID()
	selfName := Name(selfID)
	def := profile.Unmeasured(selfName, avail, total)
	self, measured := def, false
	if p.o.Self != nil {
		if d, ok := p.o.Self(); ok {
			self, measured = d, true
		}
	}
	self = withDefaults(self, def)
	self.ID, self.Name = selfID, selfName
	set := p.settings()
	self.MemoryBudget = set.MemoryBudget // the budget is this device's own setting
	if r := req.HeadReserve; r > 0 {
		self.RAMAvailable = max(0, self.RAMAvailable-r)
		if self.MemoryBudget > 0 {
			self.MemoryBudget = max(1, self.MemoryBudget-r)
		}
	}
	if !set.UseGPU() {
		self = WithoutGPU(self) // so is the gpu setting; a peer's answers say its own
	}
	self.LinkSec = map[string]float64{}
	devs := []halda.Device{self}
	peers := map[deviceid.ID]Member{}
	maxLink := 0.0
	if req.Alone {
		return devs, Member{ID: selfID, Measured: measured}, peers, maxLink
	}
	cands := p.Candidates()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cands {
		st := p.peers[c.ID]
		if st == nil || !st.ok || slices.Contains(req.Exclude, c.ID) {
			continue
		}
		d := withDefaults(st.device, def)
		name := Name(c.ID)
		d.ID, d.Name = c.ID, name // its own budget (MemoryBudget) stays: it set it
		link := p.links.Apply(halda.Device{LinkSec: map[string]float64{name: 0}}, halda.Assignment{}).LinkSec[name]
		if !(link > 0) {
			link = 1e-3 // not timed yet: a hidden state over a home LAN
		}
		maxLink = max(maxLink, link)
		self.LinkSec[name] = link
		d.LinkSec = map[string]float64{selfName: link}
		devs = append(devs, d)
		peers[c.ID] = Member{ID: c.ID, Measured: st.measured, RTT: st.rtt}
	}
	return devs, Member{ID: selfID, Measured: measured}, peers, maxLink
}

// Next is the plan for req: what the device map shows and what the next
// chat with these options will run. It changes nothing: Install does.
func (p *Planner) Next(req Request) (Plan, error) {
	path, nctx := p.resolve(req)
	var m halda.Model
	switch {
	case req.Shape != nil:
		m = *req.Shape
		m.ContextTokens = nctx
	case path == "":
		return Plan{}, ErrNoModel
	default:
		var err error
		if m, err = p.modelShape(path, nctx); err != nil {
			return Plan{ModelPath: path}, err
		}
	}
	devs, self, peers, maxLink := p.devices(req)
	prob := halda.Problem{Devices: devs, Model: m, DefaultLinkSec: max(maxLink, 1e-4),
		KeepAllDevices: req.AllDevices, HeadHoldsLayers: true, Rounds: req.Rounds, Streams: req.streams()}
	out := Plan{Key: fmt.Sprint(path, "|", nctx, "|", req.AllDevices, "|", req.Rounds, "|", req.Alone, "|", req.HeadReserve, "|", req.streams()), ModelPath: path, Model: m,
		Self: self, Peers: peers, RawDevices: map[string]halda.Device{}}
	for _, d := range devs {
		out.RawDevices[d.Name] = d
	}
	var ratios map[string][]float64
	if p.o.Ratios != nil && path != "" {
		ids := make([]string, len(devs))
		for i, d := range devs {
			ids[i] = d.Name
		}
		ratios = p.o.Ratios(path, ids)
	}
	s := p.solve(prob, ratios)
	if s.err != nil {
		out.Problem = prob
		return out, s.err
	}
	out.Raw, out.Problem, out.Plan = s.raw, s.problem, s.plan
	out.Plan = p.adopt(out.Key, out.Problem, out.Plan)
	return out, nil
}

// solve answers prob calibrated by ratios, from the memo when the same
// problem was solved before.
func (p *Planner) solve(prob halda.Problem, ratios map[string][]float64) solved {
	kb, err := json.Marshal(struct {
		P halda.Problem
		R map[string][]float64
	}{prob, ratios})
	if err != nil {
		return solved{err: err}
	}
	key := string(kb)
	p.mu.Lock()
	s, ok := p.memo[key]
	p.mu.Unlock()
	if ok {
		return s
	}
	s = solved{problem: prob}
	s.raw, s.err = halda.Solve(prob, lpsolve.Solver{})
	solves := 1
	if s.err == nil {
		s.plan = s.raw
		if cals := calib.FromRatios(s.raw, ratios); len(cals) > 0 {
			solves++
			if q, cp, err := calib.Recalibrate(prob, s.raw, cals, lpsolve.Solver{}); err == nil {
				s.problem, s.plan = q, cp
			} else {
				p.o.Log.Warn("calibration: the calibrated problem has no plan; planning uncalibrated", "err", err)
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count.Solves += solves
	if _, ok := p.memo[key]; !ok {
		p.order = append(p.order, key)
		if len(p.order) > memoSize {
			delete(p.memo, p.order[0])
			p.order = p.order[1:]
		}
	}
	p.memo[key] = s
	return s
}

// adopt keeps the last installed plan for the same request shape while its
// devices are all still there and the new one is no clear gain, both
// scored under prob: a device that joins is used from the next request
// only when worth a re-prefill, and the runner's kept job (whose plan must
// not change) serves the conversation's next turn. When every device is
// asked for, the last plan is kept only if it has every device.
func (p *Planner) adopt(key string, prob halda.Problem, plan halda.Plan) halda.Plan {
	p.mu.Lock()
	last := p.last
	p.mu.Unlock()
	return Adopt(last.key == key, last.plan, prob, plan)
}

// Adopt is adopt's rule as a function: sameKey says the last plan was made
// for the same request shape.
func Adopt(sameKey bool, last halda.Plan, prob halda.Problem, plan halda.Plan) halda.Plan {
	if !sameKey || len(last.Ring) == 0 {
		return plan // nothing to keep
	}
	if prob.KeepAllDevices && len(last.Ring) != len(prob.Devices) {
		return plan // every device was asked for, and the last plan lacks some
	}
	for _, a := range last.Ring {
		if !slices.ContainsFunc(prob.Devices, func(d halda.Device) bool { return d.Name == a.Device }) {
			return plan // a device of the last plan is gone
		}
	}
	// The last plan's prediction was made with the profiles of then: score
	// it again with this request's (calibration moves them after every
	// chat) so that the two compare alike. Else a ring whose plan only ties
	// (three devices in either order) would be re-planned, its kept job
	// dropped, whenever calibration made the new prediction lower.
	// Scored with MemorySlack: a reading a few MB lower must not charge
	// the kept plan paging.
	rescored, err := halda.Rescore(withSlack(prob), last)
	if err != nil {
		return plan
	}
	keep := !ring.Adopt(rescored.PredictedMs, plan.PredictedMs) // a device joins or leaves: τ
	if sameDevices(last, plan) {
		// Only the profiles moved: a gain within calibration's error
		// does not pay for a fresh ring job.
		keep = !(plan.PredictedMs > 0 && plan.PredictedMs < KeepMargin*rescored.PredictedMs)
	}
	if !keep {
		return plan
	}
	// Scored with the slack too: under this request's reading alone a
	// device at the edge could become a paging case (M3), whose windows
	// release their pages (ring.FromHalda), a changed plan for the kept
	// job.
	return rescored
}

// KeepMargin is how much faster a plan on the devices of the installed
// one must be predicted to replace it: below KeepMargin × the installed
// plan's time, both scored under the same profiles. The two then differ
// only by their profiles, that is by calibration, whose ratios come from
// the few decoded tokens of each run: on bench/ring.sh's rig three
// identical devices measured ratios of 0.16, 0.21 and 0.25 in one run (a
// fixed cost per window weighs on a 1-layer window; the head serves
// slices from its page cache), an error of ±25% per device. A switch costs
// a fresh job: dials, slices, windows, the conversation's prefill again
// (0.3-5 s on the rig). A device that joins or leaves is judged by
// ring.Adopt's τ (0.95).
const KeepMargin = 0.8

// MemorySlack is the share of a device's available memory by which a kept
// plan may overrun this request's reading before it is charged paging:
// 1/32, two of the planner's memory steps (ramSteps). The reading moves
// by a few MB from one turn to the next (the agent's heap, the engine's
// buffers, the kernel's page tables for the model's mapping), Halda plans
// a device's memory to the last MiB and charges any overflow as disk time
// for every token, so without it a plan that just fitted was re-planned
// on a reading a few MB lower (bench/ring.sh's case (d), 256 MiB caps).
const MemorySlack = 1.0 / 32

// withSlack is prob with every device's available memory raised by
// MemorySlack (its own memory budget, a setting, still caps it).
func withSlack(prob halda.Problem) halda.Problem {
	q := prob
	q.Devices = slices.Clone(prob.Devices)
	for i := range q.Devices {
		q.Devices[i].RAMAvailable += int64(float64(q.Devices[i].RAMAvailable) * MemorySlack)
	}
	return q
}

// sameDevices reports whether two plans run on the same set of devices.
func sameDevices(a, b halda.Plan) bool {
	if len(a.Ring) != len(b.Ring) {
		return false
	}
	for _, x := range a.Ring {
		if !slices.ContainsFunc(b.Ring, func(y halda.Assignment) bool { return y.Device == x.Device }) {
			return false
		}
	}
	return true
}

// Install records that a chat runs pl: the next request of the same shape
// keeps it unless a new plan is a clear gain.
func (p *Planner) Install(pl Plan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = installed{key: pl.Key, plan: pl.Plan}
}
