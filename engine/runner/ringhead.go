package runner

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"homering/discovery/identity"
	"homering/engine/ggml"
	"homering/engine/head"
	"homering/engine/llama"
	"homering/engine/profile/sysinfo"
	"homering/engine/ring"
	"homering/engine/ring/driver"
	"homering/engine/ring/transport"
	"homering/engine/ring/wire"
	"homering/engine/sample"
)

// AppName goes into the transport Hello of ring links.
const AppName = "homering-runner"

// defaultTick is the ring's tick, the unit of silence detection (a peer is
// lost after 3 to 12 silent ticks: engine/ring's doc, "Silence"). Long
// enough that a loaded machine is not mistaken for a dead one; a killed
// process is noticed at once anyway (its links close).
const defaultTick = 500 * time.Millisecond

// prefillChunk is the most tokens one forward pass carries (a window
// evaluates at most ggml.MaxBatch; larger activations would also hold the
// ring's links for long).
const prefillChunk = ggml.MaxBatch

// msPerToken is the decode time per token measured so far, 0 before any.
func msPerToken(st Stats) float64 {
	if st.DecodeTokens == 0 {
		return 0
	}
	return st.DecodeMS / float64(st.DecodeTokens)
}

// memLimit is the memory this device has: its cgroup's limit when that is
// below its RAM, else its RAM; 0 when unknown.
func memLimit() int64 {
	m, err := sysinfo.ReadMemory()
	if err != nil {
		return 0
	}
	if cg := m.Cgroup; cg != nil && cg.Limit > 0 && cg.Limit < m.Total {
		return cg.Limit
	}
	return m.Total
}

// ringModel is the head's model for ring jobs, kept between requests.
type ringModel struct {
	path  string
	model *ggml.Model
	vocab *llama.Vocab
	srv   *driver.SliceServer

	mu   sync.Mutex
	kept *headJob // a job held idle for the next request (ringkeep.go); guarded by mu
}

func (m *ringModel) close() {
	if m == nil {
		return
	}
	m.dropKept("the ring model is closed")
	_ = m.srv.Close()
	_ = m.vocab.Close()
	_ = m.model.Close()
}

func openRingModel(path string) (*ringModel, error) {
	m, err := ggml.Open(path)
	if err != nil {
		return nil, err
	}
	v, err := llama.LoadVocab(path)
	if err != nil {
		_ = m.Close()
		return nil, err
	}
	srv, err := driver.NewSliceServer(path)
	if err != nil {
		_ = v.Close()
		_ = m.Close()
		return nil, err
	}
	return &ringModel{path: path, model: m, vocab: v, srv: srv}, nil
}

// canonicalID returns a device ID in its canonical text form, so that plan
// entries, peers and certificates compare equal however they were written.
func canonicalID(s string) (string, identity.DeviceID, error) {
	id, err := identity.ParseDeviceID(s)
	if err != nil {
		return "", id, fmt.Errorf("runner: %q is not a device ID: %w", s, err)
	}
	return id.String(), id, nil
}

// normalize checks rp and rewrites its device IDs canonically.
func normalize(rp RingParams, self string) (RingParams, error) {
	if rp.Plan == nil || len(rp.Plan.Devices) == 0 {
		return rp, errors.New("runner: the ring needs a plan with at least the head")
	}
	p := *rp.Plan
	p.Devices = slices.Clone(p.Devices)
	for i := range p.Devices {
		id, _, err := canonicalID(p.Devices[i].ID)
		if err != nil {
			return rp, err
		}
		p.Devices[i].ID = id
	}
	if rp.TickMS < 0 || rp.TickMS > 60000 {
		return rp, fmt.Errorf("runner: a ring tick of %d ms is out of range; give 1-60000 ms, or 0 for the default", rp.TickMS)
	}
	if p.Devices[0].ID != self {
		return rp, fmt.Errorf("runner: the plan's head is %s, this device is %s", p.Devices[0].ID, self)
	}
	if _, _, err := wire.Encode(&p); err != nil {
		return rp, fmt.Errorf("runner: the plan cannot be installed: %w", err)
	}
	rp.Plan = &p
	rp.Peers = slices.Clone(rp.Peers)
	for i := range rp.Peers {
		id, _, err := canonicalID(rp.Peers[i].ID)
		if err != nil {
			return rp, err
		}
		rp.Peers[i].ID = id
	}
	for _, d := range p.Devices[1:] {
		if !slices.ContainsFunc(rp.Peers, func(pr RingPeer) bool { return pr.ID == d.ID }) {
			return rp, fmt.Errorf("runner: the plan has device %s but no address for it", d.ID)
		}
	}
	return rp, nil
}

// headJob is one ring generation on the head: its links, its driver and
// the conversation's tokens.
type headJob struct {
	c          *child
	id         uint64 // request id
	log        *slog.Logger
	rm         *ringModel
	ep         *transport.Endpoint
	self       string
	job        uint64
	nCtx       int
	tick       time.Duration
	threads    int
	noPrefetch bool
	drv        *driver.Driver
	slices     []*transport.Conn // slice connections, closed with the job
	eng        *driver.GGML
	plans      <-chan RingParams

	sent      atomic.Pointer[transferProgress] // the request's; slice connections outlive it when the job is kept
	peers     map[string]RingPeer              // every worker known to this job
	connected map[string]bool
	ctx       context.Context // the job's links and slice servers

	// A job outlives its request when kept (ringkeep.go).
	identity string             // RingParams.Identity the endpoint was made with
	loadNCtx int                // the context asked for (LoadParams.NCtx resolved); nCtx is the KV's
	keep     time.Duration      // hold the job idle this long after the request; 0: end it
	cancel   context.CancelFunc // ends ctx: the driver and every link
	runDone  chan error         // the driver's Run result; put back after reading
	plan     *wire.Plan         // the plan installed last
	up       bool               // plan is Up on every device
	kvToks   []int32            // the tokens whose KV the plan's windows hold, from position 0
	exact    int                // of kvToks, the first exact positions were computed in full passes of rows from 0, as a fresh job does
	rows     int                // the prefill pass size those passes had
	hold     *idleHold          // while held idle
	sess     *ring.Session      // the driver's; read only once the driver has stopped (end), then nil
}

func (c *child) ringGenerate(ctx context.Context, id uint64, req Request, plans <-chan RingParams) Event {
	fail := func(code string, err error) Event {
		return errorEvent(id, code, err)
	}
	if req.Load == nil || req.Load.Model == "" || req.Ring == nil || req.Generate == nil {
		return fail(CodeBadRequest, errors.New("runner: ring_generate needs load, ring and generate"))
	}
	g := *req.Generate
	if err := g.sampling().Validate(); err != nil {
		return fail(CodeBadRequest, err)
	}
	if req.Ring.KeepMS < 0 || req.Ring.KeepMS > maxKeepMS {
		return fail(CodeBadRequest, fmt.Errorf("runner: keeping a ring job %d ms is out of range; give 0-%d ms", req.Ring.KeepMS, maxKeepMS))
	}
	if c.rm == nil || c.rm.path != req.Load.Model {
		c.rm.close()
		c.rm = nil
		rm, err := openRingModel(req.Load.Model)
		if err != nil {
			return fail(CodeLoad, err)
		}
		c.rm = rm
	}
	ident, err := identity.LoadOrCreate(req.Ring.Identity, time.Now(), crand.Reader)
	if err != nil {
		return fail(CodeRing, err)
	}
	self := ident.ID.String()
	rp, err := normalize(*req.Ring, self)
	if err != nil {
		return fail(CodeBadRequest, err)
	}
	info := c.rm.model.Info()
	nCtx := req.Load.NCtx
	if nCtx <= 0 {
		nCtx = min(max(info.NCtxTrain, 0), 4096)
		if nCtx == 0 {
			nCtx = 4096
		}
	}
	toks, err := head.PromptTokens(c.rm.vocab, head.Request{Prompt: g.Prompt, Messages: g.messages()})
	if err != nil {
		return fail(CodeBadRequest, err)
	}
	if err := head.CheckContext(len(toks), nCtx); err != nil {
		return fail(CodeBadRequest, err)
	}
	keep := time.Duration(rp.KeepMS) * time.Millisecond
	if h := c.rm.takeKept(); h != nil {
		why := h.reusable(rp, *req.Load, nCtx, len(toks), g.MaxTokens)
		if why == "" {
			h.id, h.plans, h.keep = id, plans, keep
			h.sent.Store(newTransferProgress(c, id))
			return h.run(ctx, rp, g, toks)
		}
		h.log.Info("the kept ring job cannot serve this request; starting afresh", "why", why)
		h.end()
	}
	h := &headJob{c: c, id: id, log: c.log.With("ring", "head"), rm: c.rm, self: self, nCtx: nCtx, tick: defaultTick,
		plans: plans, peers: map[string]RingPeer{}, connected: map[string]bool{}, job: rand.Uint64(), threads: req.Load.Threads, noPrefetch: rp.NoPrefetch,
		identity: rp.Identity, loadNCtx: nCtx, keep: keep}
	h.sent.Store(newTransferProgress(c, id))
	if rp.TickMS > 0 {
		h.tick = time.Duration(rp.TickMS) * time.Millisecond
	}
	h.ep = transport.New(transport.Config{
		Identity: ident,
		Hello: func() transport.Hello {
			return transport.Hello{ProtoMin: transport.ProtoMin, ProtoMax: transport.ProtoMax, Purpose: transport.PurposeLink, App: AppName}
		},
		Authorize: func(id identity.DeviceID) transport.Decision {
			if _, ok := h.peers[id.String()]; ok {
				return transport.AllowLink
			}
			return transport.Refuse
		},
		Log: h.log,
	})
	return h.run(ctx, rp, g, toks)
}

// maxKeepMS bounds RingParams.KeepMS: an hour.
const maxKeepMS = 3600 * 1000

// run serves one request on h: a new job (its plan installed, the prompt
// prefilled from position 0) or a kept one (its plan up, the prompt
// prefilled from the prefix its KV caches share with toks). When the
// request ends the job ends too, or is held idle for the next (h.keep).
func (h *headJob) run(ctx context.Context, rp RingParams, g GenerateParams, toks []int32) Event {
	start := time.Now()
	fail := func(code string, err error) Event {
		return errorEvent(h.id, code, err)
	}
	var err error
	fresh := h.drv == nil
	if fresh {
		h.nCtx = ring.JobContext(h.loadNCtx, len(toks), g.MaxTokens)
		if h.keep > 0 {
			h.nCtx = ring.KeptContext(h.loadNCtx, len(toks), g.MaxTokens)
		}
		h.eng = &driver.GGML{M: h.rm.model, NCtx: h.nCtx, Threads: h.threads}
	}

	// Sampling: greedy is the engine's argmax (exact); anything else uses
	// engine/sample on the head's logits. Logits of a prefill chunk that is
	// not the last are not sampled (sampleNow is false). A kept job's
	// engine computes nothing between requests, so Sample is set here.
	var sampleNow atomic.Bool
	var smp *sample.Sampler
	sp := g.sampling()
	h.eng.Sample = nil
	if sp.Temperature > 0 || (sp.RepeatPenalty != 0 && sp.RepeatPenalty != 1) {
		if smp, err = head.NewSampler(sp, g.Seed); err != nil {
			h.end() // a kept job taken for this request
			return fail(CodeBadRequest, err)
		}
		for _, t := range toks {
			smp.Accept(t)
		}
		h.eng.Sample = func(logits []float32) int32 {
			if !sampleNow.Load() {
				return 0
			}
			t, err := smp.Sample(logits)
			if err != nil {
				return 0
			}
			return t
		}
	}

	if fresh {
		// The job's links and driver live as long as the job, which may
		// outlive this request (kept).
		jctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		h.ctx, h.cancel = jctx, cancel
		// The session's silence limits start from what earlier jobs of
		// this process saw of the same peers (ringgaps.go).
		h.sess = h.c.gaps.session(h.self, h.tick, h.log)
		h.drv = driver.New(h.sess, h.eng, h.tick, h.log)
		h.drv.NoPrefetch = h.noPrefetch
		h.runDone = make(chan error, 1)
		go func() { h.runDone <- h.drv.Run(jctx) }()
	}
	runDone := h.runDone
	var peak memPeak
	all := slices.Clone(toks)
	pos, inflight := 0, 0
	kept := false // set by finish: hold the job for the next request
	defer func() {
		kv, compute := h.eng.Memory()
		a := peak.at
		if kept {
			h.holdIdle(inflight > 0)
		} else {
			h.end()
		}
		h.log.Info("ring job memory (peak anonymous and its parts)", "anon_mb", mb(a.Anon), "go_heap_mb", mb(a.GoHeap), "go_free_mb", mb(a.GoFree), "go_other_mb", mb(a.GoOther),
			"kv_mb", mb(kv), "compute_mb", mb(compute), "rest_mb", mb(a.Anon-a.GoHeap-a.GoOther-kv-compute), "kept", kept)
	}()

	mem := newPressure()
	// Slices are served off this loop: sample memory while nothing else
	// happens too.
	memTick := time.NewTicker(250 * time.Millisecond)
	defer memTick.Stop()
	var st Stats
	st.PromptTokens = len(toks)
	var lossAt time.Time
	var lastTok time.Time
	var text head.UTF8Buffer
	nPrompt := len(toks)
	// A fresh job's pass size, also on a kept job whose caches are bigger:
	// a kept job must compute what a fresh one does.
	info := h.rm.model.Info()
	rows := ring.PassRows(prefillChunk, ring.Shape{NEmbd: info.NEmbd, NFF: info.NFF, NHead: info.NHead}, ring.JobContext(h.loadNCtx, len(toks), g.MaxTokens), memLimit())
	if rows < prefillChunk {
		h.log.Info("ring prefill passes shortened: memory is short", "rows", rows)
	}
	plan := h.plan
	// exactEnd: positions [0, exactEnd) were computed in full prompt passes
	// of rows, each starting at a multiple of rows, as a fresh job on this
	// prompt computes them (the KV a later turn may reuse bit for bit).
	exactEnd := 0

	startPass := func() error {
		chunk := all[pos:ring.PassEnd(pos, nPrompt, len(all), rows, msPerToken(st))]
		sampleNow.Store(pos+len(chunk) == len(all))
		if err := h.drv.Post(ctx, ring.StartToken{Tokens: slices.Clone(chunk), Pos: pos}); err != nil {
			return err
		}
		inflight = len(chunk)
		if st.Passes == 0 {
			st.StartMS = ms(time.Since(start))
		}
		st.Passes++
		st.Rows += len(chunk)
		return nil
	}
	finish := func(reason string) Event {
		st.Reason = reason
		st.TotalMS = ms(time.Since(start))
		st.Devices = h.deviceStats(plan, mem)
		// The windows hold the KV of every token evaluated so far (a pass
		// still in flight adds to it): keep them for the next turn.
		if h.keep > 0 && h.up && (reason == ReasonStop || reason == ReasonLength || reason == ReasonCancelled) {
			h.kvToks, h.exact, h.rows = slices.Clone(all[:pos]), exactEnd, rows
			kept = true
		}
		return Event{ID: h.id, Type: EvDone, Stats: &st}
	}

	// Until the plan is up, the workers fetch their slices from this
	// process: collect their garbage sooner (see servingGC).
	gc := debug.SetGCPercent(servingGC)
	defer func() { debug.SetGCPercent(gc) }()
	if fresh {
		if plan, err = h.install(ctx, rp, &st); err != nil {
			if ctx.Err() != nil {
				return finish(ReasonCancelled)
			}
			return fail(CodeRing, err)
		}
	} else {
		// The kept job's plan is up: evaluate only the passes a fresh job
		// would compute differently. Batched passes round differently from
		// other batches (on near-tie logits another token wins), so only
		// the full passes from position 0 that the caches hold with the
		// same tokens are kept; the prefill resumes at the first pass a
		// fresh job would compute otherwise (at least the last one, for
		// its logits). Every window truncates its cache there.
		debug.SetGCPercent(gc)
		h.setIdle(false)
		pos = ring.KeptPrefix(h.kvToks, toks, h.exact, h.rows, rows)
		exactEnd = pos
		st.CachedTokens = pos
		h.log.Info("ring job kept from the last request", "cached", pos, "prompt", len(toks))
		if err := startPass(); err != nil {
			return finish(ReasonCancelled)
		}
	}
	for {
		var a ring.Action
		select {
		case <-ctx.Done():
			return finish(ReasonCancelled)
		case err := <-runDone:
			runDone <- err // for the deferred cleanup
			return fail(CodeRing, fmt.Errorf("runner: the ring stopped: %w", err))
		case <-memTick.C:
			mem.sample()
			peak.sample()
			continue
		case a = <-h.drv.Out():
		}
		mem.sample()
		peak.sample()
		switch a := a.(type) {
		case ring.Ready:
			// Every worker has its slice now: give back at once the Go heap
			// the transfers grew (the runtime would keep it for minutes, and
			// memory pressure counts it).
			debug.SetGCPercent(gc)
			debug.FreeOSMemory()
			h.up = true
			// A new plan has fresh windows: (re-)prefill the conversation.
			pos, exactEnd = 0, 0
			if err := startPass(); err != nil {
				return finish(ReasonCancelled)
			}
		case ring.Replan:
			h.up, inflight = false, 0
			h.log.Warn("ring lost devices; asking for a new plan", "without", a.Without, "reason", a.Reason)
			if lossAt.IsZero() {
				lossAt = time.Now()
			}
			rp, err := h.askPlan(ctx, a.Without)
			if err != nil {
				if ctx.Err() != nil {
					return finish(ReasonCancelled)
				}
				return fail(CodeRing, err)
			}
			st.Replans++
			debug.SetGCPercent(servingGC)
			if plan, err = h.install(ctx, rp, &st); err != nil {
				if ctx.Err() != nil {
					return finish(ReasonCancelled)
				}
				return fail(CodeRing, err)
			}
		case ring.EmitToken:
			if pos == exactEnd && inflight == rows && pos+inflight <= nPrompt {
				exactEnd += rows
			}
			pos += inflight
			inflight = 0
			if pos < len(all) {
				if err := startPass(); err != nil { // the next prefill chunk
					return finish(ReasonCancelled)
				}
				continue
			}
			now := time.Now()
			if len(all) == nPrompt {
				st.PromptMS = ms(now.Sub(start))
			} else {
				st.DecodeMS += ms(now.Sub(lastTok))
				st.DecodeTokens++
			}
			lastTok = now
			if !lossAt.IsZero() {
				st.LossToTokenMS = ms(now.Sub(lossAt))
				h.log.Info("ring resumed after a loss", "loss_to_token", now.Sub(lossAt).Round(time.Millisecond))
				lossAt = time.Time{}
			}
			tok := a.Token
			if smp != nil {
				smp.Accept(tok)
			}
			all = append(all, tok)
			if h.rm.vocab.IsEOG(tok) {
				if err := h.c.send(Event{ID: h.id, Type: EvToken, Token: &Token{ID: tok, Text: text.Flush(), EOG: true}}); err != nil {
					return finish(ReasonCancelled)
				}
				return finish(ReasonStop)
			}
			st.CompletionTokens++
			last := st.CompletionTokens == g.MaxTokens || len(all) >= h.nCtx
			piece, err := h.rm.vocab.TokenToPiece(tok)
			if err != nil {
				return fail(CodeGenerate, err)
			}
			if err := h.c.send(Event{ID: h.id, Type: EvToken, Token: &Token{ID: tok, Text: text.Add(piece, last)}}); err != nil {
				return finish(ReasonCancelled)
			}
			if last {
				return finish(ReasonLength)
			}
			if err := startPass(); err != nil {
				return finish(ReasonCancelled)
			}
		}
	}
}

// servingGC is the head's GOGC while workers fetch slices from it (from
// installing a plan until it is up; no token is computed then): every
// chunk sent leaves its copies as garbage, and at the default 100 the heap
// grows to twice what is live before the collector runs (25 MB of Go heap
// at the peak of shipping the bench model's slices to two workers).
const servingGC = 25

// askPlan asks the parent for a plan without the lost devices and waits for
// it.
func (h *headJob) askPlan(ctx context.Context, without []string) (RingParams, error) {
	if err := h.c.send(Event{ID: h.id, Type: EvReplan, Without: without}); err != nil {
		return RingParams{}, err
	}
	select {
	case rp := <-h.plans:
		return normalize(rp, h.self)
	case <-ctx.Done():
		return RingParams{}, ctx.Err()
	}
}

// install connects the plan's workers and installs it. A worker that cannot
// be reached makes it ask for another plan without that worker.
func (h *headJob) install(ctx context.Context, rp RingParams, st *Stats) (*wire.Plan, error) {
	for {
		added := false
		for _, p := range rp.Peers {
			if old, ok := h.peers[p.ID]; !ok || old.Addr != p.Addr {
				added = true
			}
			h.peers[p.ID] = p
		}
		var lost []string
		for _, d := range rp.Plan.Devices[1:] {
			if h.connected[d.ID] && h.drv.HasLink(d.ID) {
				continue
			}
			if err := h.connect(ctx, h.peers[d.ID]); err != nil {
				h.log.Warn("cannot reach a ring worker", "device", d.ID, "err", err)
				lost = append(lost, d.ID)
			}
		}
		if len(lost) == 0 {
			for _, d := range rp.Plan.Devices[1:] {
				h.sent.Load().setTotal(d.ID, h.rm.srv.Need(held(d.Windows)))
			}
			if added {
				h.updatePeers(rp.Plan)
			}
			if err := h.drv.Post(ctx, ring.PlanInstalled{Plan: rp.Plan}); err != nil {
				return nil, err
			}
			h.plan, h.up = rp.Plan, false
			h.log.Info("ring plan installed", "plan", ring.MsgString(rp.Plan))
			return rp.Plan, nil
		}
		var err error
		if rp, err = h.askPlan(ctx, lost); err != nil {
			return nil, err
		}
		st.Replans++
	}
}

// end ends the job: the workers are told, the links close, the windows
// and what the job allocated go back before the next one.
func (h *headJob) end() {
	if h.drv == nil {
		return
	}
	// Tell the workers the job is over, so they free their memory now
	// rather than when they notice the silence.
	for id := range h.connected {
		_ = h.drv.SendTo(id, &wire.Goodbye{Code: wire.CodeHeadGone, Text: "the head ended the job"})
	}
	h.cancel()
	err := <-h.runDone
	h.runDone <- err
	if h.sess != nil { // the driver has stopped: the session is this goroutine's now
		h.c.gaps.record(time.Now(), h.tick, h.sess.Gaps())
		h.sess = nil
	}
	h.drv.CloseLinks()
	for _, sc := range h.slices {
		_ = sc.Close()
	}
	h.eng.Close()
	h.up = false
	debug.FreeOSMemory()
	driver.TrimMalloc()
}

// connect opens the head's link and slice connection to a worker and starts
// the job there. ctx bounds the dials; the connections live as long as the
// job (h.ctx).
func (h *headJob) connect(ctx context.Context, p RingPeer) error {
	if p.Addr == "" {
		return fmt.Errorf("runner: no address for device %s", p.ID)
	}
	_, did, err := canonicalID(p.ID)
	if err != nil {
		return err
	}
	conn, err := h.ep.Dial(ctx, p.Addr, did, transport.PurposeLink)
	if err != nil {
		return err
	}
	ack, err := roundTrip(ctx, conn, h.jobStart(), 10*time.Second)
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("runner: start the job on %s: %w", p.ID, err)
	}
	if a, ok := ack.(*wire.JobAck); !ok || a.Job != h.job || a.Code != wire.CodeOK {
		_ = conn.Close()
		return fmt.Errorf("runner: device %s refused the job: %s", p.ID, ring.MsgString(ack))
	}
	sc, err := h.ep.Dial(ctx, p.Addr, did, transport.PurposeSlice)
	if err != nil {
		_ = conn.Close()
		return err
	}
	h.slices = append(h.slices, sc)
	go func() {
		if err := h.rm.srv.ServeCounted(h.ctx, sc, func(n int64) { h.sent.Load().add(p.ID, n) }); err != nil {
			h.log.Warn("slice connection ended", "device", p.ID, "err", err)
		}
	}()
	h.drv.AddConn(h.ctx, p.ID, conn)
	h.connected[p.ID] = true
	return nil
}

func (h *headJob) jobStart() *wire.JobStart {
	js := &wire.JobStart{Job: h.job, Model: h.rm.srv.Model, NCtx: h.nCtx, NoPrefetch: h.noPrefetch, TickMS: int(h.tick / time.Millisecond)}
	for _, id := range slices.Sorted(mapKeys(h.peers)) {
		js.Peers = append(js.Peers, wire.Peer{ID: id, Addr: h.peers[id].Addr})
	}
	return js
}

// updatePeers tells the connected workers of a changed peer list (a device
// joined), so that each can dial its successor.
func (h *headJob) updatePeers(plan *wire.Plan) {
	js := h.jobStart()
	for _, d := range plan.Devices[1:] {
		_ = h.drv.SendTo(d.ID, js)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// roundTrip sends m on a connection no reader owns yet and waits for one
// answer, at most timeout.
func roundTrip(ctx context.Context, c *transport.Conn, m wire.Msg, timeout time.Duration) (wire.Msg, error) {
	typ, p, err := wire.Encode(m)
	if err != nil {
		return nil, err
	}
	if err := c.Send(transport.Frame{Type: transport.MsgType(typ), Payload: p}); err != nil {
		return nil, err
	}
	return recvOne(ctx, c, timeout)
}

// recvOne reads one ring message from c, closing c when none comes within
// timeout or ctx ends.
func recvOne(ctx context.Context, c *transport.Conn, timeout time.Duration) (wire.Msg, error) {
	t := time.AfterFunc(timeout, func() { _ = c.Close() })
	defer t.Stop()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	f, err := c.Recv()
	if err != nil {
		return nil, err
	}
	return wire.Decode(wire.Type(f.Type), f.Payload)
}

// deviceStats turns the driver's measurements into the parent's Stats.
func (h *headJob) deviceStats(plan *wire.Plan, mem *pressure) []DeviceStats {
	if plan == nil {
		return nil
	}
	got := h.drv.Stats()
	out := make([]DeviceStats, 0, len(plan.Devices))
	for i, d := range plan.Devices {
		s := got[d.ID]
		if i > 0 && s.Plan != plan.ID {
			s = wire.DeviceStats{} // a late report of an earlier plan
		}
		ds := DeviceStats{ID: d.ID, Windows: slices.Clone(d.Windows), Fetched: int64(s.Fetched), SliceBytes: int64(s.SliceBytes)}
		if s.Tokens > 0 {
			ds.ComputeMS = float64(s.ComputeUS) / 1000 / float64(s.Tokens)
		}
		ds.MemPressure = float64(s.Pressure) / 10000
		if i == 0 {
			ds.MemPressure = mem.max
		}
		out = append(out, ds)
	}
	return out
}

// pressure tracks the largest memory pressure seen since it was made: the
// drop of available memory over total memory, or, inside a memory cgroup
// with a limit, the cgroup's non-reclaimable use (usage less page cache,
// which includes mapped weights the kernel may evict) over its limit.
type pressure struct {
	base sysinfo.Memory
	ok   bool
	max  float64
}

func newPressure() *pressure {
	m, err := sysinfo.ReadMemory()
	return &pressure{base: m, ok: err == nil}
}

func (p *pressure) sample() float64 {
	if !p.ok {
		return 0
	}
	m, err := sysinfo.ReadMemory()
	if err != nil {
		return p.max
	}
	var v float64
	if cg := m.Cgroup; cg != nil && cg.Limit > 0 && cg.Limit < m.Total {
		v = float64(max(cg.Usage-cg.File, 0)) / float64(cg.Limit)
	} else if m.Total > 0 {
		v = float64(max(p.base.Available-m.Available, 0)) / float64(m.Total)
	}
	p.max = max(p.max, min(v, 1))
	return p.max
}

func mb(n int64) float64 { return math.Round(float64(n)/(1<<20)*10) / 10 }

// transferProgress counts the weight bytes sent to each worker and tells the
// parent, at most every progressEvery per worker and once at the total.
type transferProgress struct {
	c  *child
	id uint64 // the ring_generate request

	mu    sync.Mutex
	done  map[string]int64
	total map[string]int64
	last  map[string]time.Time
}

const progressEvery = 200 * time.Millisecond

func newTransferProgress(c *child, id uint64) *transferProgress {
	return &transferProgress{c: c, id: id, done: map[string]int64{}, total: map[string]int64{}, last: map[string]time.Time{}}
}

func (t *transferProgress) setTotal(dev string, n int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total[dev] = n
}

func (t *transferProgress) add(dev string, n int64) {
	t.mu.Lock()
	t.done[dev] += n
	done, total := t.done[dev], t.total[dev]
	now := time.Now()
	if now.Sub(t.last[dev]) < progressEvery && (total == 0 || done < total) {
		t.mu.Unlock()
		return
	}
	t.last[dev] = now
	t.mu.Unlock()
	_ = t.c.send(Event{ID: t.id, Type: EvProgress, Progress: &Progress{Device: dev, Done: done, Total: max(total, done)}})
}
