package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"homering/discovery/deviceid"
	"homering/discovery/identity"
	"homering/engine/ggml"
	"homering/engine/head"
	"homering/engine/llama"
	"homering/engine/profile/sysinfo"
	"homering/engine/ring"
	"homering/engine/ring/driver"
	"homering/engine/ring/ggmlengine"
	"homering/engine/ring/transport"
	"homering/engine/ring/wire"
	"homering/engine/slice"
	"homering/halda"
	"homering/halda/lpsolve"
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

// Head is a runner process's head side of ring jobs: the model it maps
// for them (weights, vocabulary, the slice server its workers fetch from),
// kept between requests, and the job it holds idle for the next request
// (keep.go).
type Head struct {
	path  string
	model *ggml.Model
	vocab *llama.Vocab
	srv   *slice.Server
	gaps  *Gaps // the process's silence history, seeding each job's session
	log   *slog.Logger

	mu     sync.Mutex
	kept   *headJob // a job held idle for the next request (keep.go); guarded by mu
	active *headJob // the job serving requests now, which others join (streams.go); guarded by mu
	// freed is closed when a stream of active leaves or active ends
	// (streams.go, join); guarded by mu, nil until a request waits.
	freed chan struct{}
	// beginMu makes Begin's choice (join, resume or begin a job) one
	// request at a time.
	beginMu sync.Mutex
}

// Close ends the kept job, if any, and unmaps the model; h may be nil.
func (m *Head) Close() {
	if m == nil {
		return
	}
	m.dropKept("the ring model is closed")
	_ = m.srv.Close()
	_ = m.vocab.Close()
	_ = m.model.Close()
}

// OpenHead maps the model at path for ring jobs headed by this process;
// gaps is the process's silence history, shared with its worker side.
func OpenHead(path string, gaps *Gaps, log *slog.Logger) (*Head, error) {
	m, err := ggml.Open(path)
	if err != nil {
		return nil, err
	}
	v, err := llama.LoadVocab(path)
	if err != nil {
		_ = m.Close()
		return nil, err
	}
	srv, err := slice.NewServer(path)
	if err != nil {
		_ = v.Close()
		_ = m.Close()
		return nil, err
	}
	return &Head{path: path, model: m, vocab: v, srv: srv, gaps: gaps, log: log}, nil
}

// Path is the model's file.
func (m *Head) Path() string { return m.path }

// Vocab is the model's vocabulary, for the generation loop.
func (m *Head) Vocab() *llama.Vocab { return m.vocab }

// NCtxTrain is the context the model was trained with.
func (m *Head) NCtxTrain() int { return m.model.Info().NCtxTrain }

// normalize checks rp: its plan, its problem and its peers.
func normalize(rp Params, self deviceid.ID) (Params, error) {
	if rp.Plan == nil || len(rp.Plan.Devices) == 0 {
		return rp, errors.New("job: the ring needs a plan with at least the head")
	}
	p := *rp.Plan
	p.DType = ringHidden() // the agent plans layers; the wire's dtype is this head's switch (env.go)
	if rp.TickMS < 0 || rp.TickMS > 60000 {
		return rp, fmt.Errorf("job: a ring tick of %d ms is out of range; give 1-60000 ms, or 0 for the default", rp.TickMS)
	}
	if rp.Streams < 0 || rp.Streams > wire.MaxStreams {
		return rp, fmt.Errorf("job: a plan admitting %d conversations at once is out of range; give 1-%d, or 0 for all", rp.Streams, wire.MaxStreams)
	}
	if p.Devices[0].ID != self {
		return rp, fmt.Errorf("job: the plan's head is %s, this device is %s", p.Devices[0].ID, self)
	}
	if _, _, err := wire.Encode(&p); err != nil {
		return rp, fmt.Errorf("job: the plan cannot be installed: %w", err)
	}
	rp.Plan = &p
	if rp.Problem != nil {
		if err := checkProblem(*rp.Problem, self); err != nil {
			return rp, err
		}
	}
	for _, pr := range rp.Peers {
		if pr.ID.IsZero() {
			return rp, fmt.Errorf("job: a peer at %q has no device ID", pr.Addr)
		}
	}
	for _, d := range p.Devices[1:] {
		if !slices.ContainsFunc(rp.Peers, func(pr Peer) bool { return pr.ID == d.ID }) {
			return rp, fmt.Errorf("job: the plan has device %s but no address for it", d.ID)
		}
	}
	return rp, nil
}

// checkProblem checks that q, which a re-plan after a loss starts from,
// names its devices as the plan and the peers do (halda.Device.ID) and
// starts with this device, the head.
func checkProblem(q halda.Problem, self deviceid.ID) error {
	for _, d := range q.Devices {
		if d.ID.IsZero() {
			return fmt.Errorf("job: the ring's problem has device %q without a device ID", d.Name)
		}
	}
	if len(q.Devices) == 0 || q.Devices[0].ID != self {
		return errors.New("job: the ring's problem must start with this device, the head")
	}
	return nil
}

// headJob is one ring job on the head: its links, its driver, the
// conversation's tokens, and the passes of the request it serves.
type headJob struct {
	log        *slog.Logger
	rm         *Head
	ep         *transport.Endpoint
	self       deviceid.ID
	job        uint64
	nCtx       int
	tick       time.Duration
	threads    int
	noPrefetch bool
	drv        *driver.Driver
	slices     []*transport.Conn // slice connections, closed with the job
	eng        *ggmlengine.GGML
	// problem is the calibrated problem the plan was solved from, less the
	// devices lost since (nil: a loss ends the request); lost those
	// devices, replanned the plan last re-planned (ring.PlanWithout).
	problem   *halda.Problem
	lost      []deviceid.ID
	replanned *halda.Plan

	sent      atomic.Pointer[transferProgress] // the request's; slice connections outlive it when the job is kept
	peers     map[deviceid.ID]Peer             // every worker known to this job
	connected map[deviceid.ID]bool
	ctx       context.Context // the job's links and slice servers

	// A job outlives its request when kept (keep.go).
	identity string             // Params.Identity the endpoint was made with
	loadNCtx int                // the context asked for (LoadParams.NCtx resolved); nCtx is the KV's
	keep     time.Duration      // hold the job idle this long after the request; 0: end it
	cancel   context.CancelFunc // ends ctx: the driver and every link
	runDone  chan error         // the driver's Run result; put back after reading
	plan     *wire.Plan         // the plan installed last
	up       bool               // plan is Up on every device
	kvToks   []int32            // the tokens whose KV the plan's windows hold, from position 0
	exact    int                // of kvToks, the first exact positions were computed in full micro-batches of rows from 0, as a fresh job does
	rows     int                // the prefill micro-batch those had
	hold     *idleHold          // while held idle
	sess     *ring.Session      // the driver's; read only once the driver has stopped (end), then nil

	// The request that began or resumed the job, on stream 0; requests
	// that come while it runs join as other streams (streams.go).
	*conv
	gc      int // the GOGC to go back to (see servingGC)
	mem     *pressure
	peak    memPeak
	memTick *time.Ticker

	streams streams
	started chan struct{} // closed once the driver runs (begin)
}

// conv is one request's conversation on the job, on its stream: read and
// written under streams.mu (the goroutine reading the driver's actions
// serves every stream's).
type conv struct {
	stream   int
	all      []int32   // the conversation: once the passes asked for are back, the windows hold all of it
	pos      int       // of all, the tokens the windows hold
	inflight int       // rows of the pass going round; 0: none
	nPrompt  int       // of all, the prompt's tokens
	passRows int       // this request's prefill pass size (ring.PassRows)
	micro    int       // the micro-batch its prefill passes are pipelined in on the plan (ring.MicroRows); set when the plan is up
	exactEnd int       // positions [0, exactEnd) were computed in full prompt micro-batches of micro from 0, as a fresh job computes them (the KV a later turn may reuse bit for bit)
	tr       trace     // where the request's time went (trace.go)
	logits   []float32 // the output window's, of the last pass back
	verifyAt int       // > 0: the pass from this position is a verification (EvalAll), one batch whose every row's logits come back
	decodeMS float64   // time of the passes of one generated token, for ring.PassEnd
	decodeN  int
	lossAt   time.Time     // a worker was lost; cleared by the next token's logits
	reqStats Result        // Passes, Rows, Replans, LossToTokenMS of the request
	wake     chan struct{} // a pass of this stream came back (1-buffered)
}

func newConv(stream int) *conv { return &conv{stream: stream, wake: make(chan struct{}, 1)} }

// Request is one ring request (the protocol's ring_generate) as the
// generation loop's head.Model: Begin takes the kept job when it can serve
// the prompt, else starts one; Eval runs passes round its ring; Finish
// ends the request.
type Request struct {
	m          *Head
	rp         Params // normalized
	nCtx       int    // the context asked for, resolved
	ident      *identity.Identity
	onProgress func(Progress)
	h          *headJob // set by Begin
	c          *conv    // its conversation on h
}

// Request checks p against this device's identity (the plan's first device
// must be ident) and makes the request for a context of nCtx positions
// (the load's, resolved: engine/head.ContextSize). onProgress hears how far
// the weight slices have been sent to each worker. Its error is the
// request's fault (a bad request), never the ring's.
func (m *Head) Request(p Params, nCtx int, ident *identity.Identity, onProgress func(Progress)) (*Request, error) {
	rp, err := normalize(p, ident.ID)
	if err != nil {
		return nil, err
	}
	return &Request{m: m, rp: rp, nCtx: nCtx, ident: ident, onProgress: onProgress}, nil
}

func (r *Request) Begin(ctx context.Context, toks []int32, maxTokens int) (int, error) {
	m, rp := r.m, r.rp
	keep := time.Duration(rp.KeepMS) * time.Millisecond
	// One request at a time decides whether it joins the job serving
	// requests now, resumes the kept one or begins one (streams.go).
	m.beginMu.Lock()
	for waited := false; ; waited = true {
		h, c, wait, err := m.join(rp, r.nCtx, len(toks), maxTokens)
		if wait != nil {
			// The job runs as many streams as its plan admits: this
			// request waits in turn (the agent says another reply is in
			// progress) until one leaves or the job ends.
			m.beginMu.Unlock()
			if !waited {
				m.log.Info("request waits for a stream: the ring job runs as many conversations as its plan admits")
			}
			select {
			case <-wait:
			case <-ctx.Done():
				return 0, ctx.Err()
			}
			m.beginMu.Lock()
			continue
		}
		if err != nil || h != nil {
			m.beginMu.Unlock()
			if err != nil {
				return 0, err
			}
			r.h, r.c = h, c
			return 0, h.beginStream(ctx, c)
		}
		break
	}
	if h := m.takeKept(); h != nil {
		why := h.reusable(rp, r.nCtx, len(toks), maxTokens)
		if why == "" {
			// The agent's problem of this turn: its calibration may
			// have moved since the job's plan was made.
			h.keep, h.problem, h.lost = keep, rp.Problem, nil
			h.streams.admit.Store(int32(admitted(rp))) // this turn's plan's (the same placement)
			h.sent.Store(newTransferProgress(r.onProgress))
			r.h, r.c = h, h.conv
			n := h.resume(toks, maxTokens)
			m.setActive(h)
			m.beginMu.Unlock()
			return n, nil
		}
		h.log.Info("the kept ring job cannot serve this request; starting afresh", "why", why)
		h.end()
	}
	h := &headJob{log: m.log.With("ring", "head"), rm: m, self: r.ident.ID, tick: defaultTick,
		problem: rp.Problem, peers: map[deviceid.ID]Peer{}, connected: map[deviceid.ID]bool{}, job: rand.Uint64(), threads: rp.Threads, noPrefetch: rp.NoPrefetch,
		identity: rp.Identity, loadNCtx: r.nCtx, keep: keep, conv: newConv(0), started: make(chan struct{})}
	h.streams.init(h.conv, admitted(rp))
	h.sent.Store(newTransferProgress(r.onProgress))
	if rp.TickMS > 0 {
		h.tick = time.Duration(rp.TickMS) * time.Millisecond
	}
	h.ep = transport.New(transport.Config{
		Identity: r.ident,
		Hello: func() transport.Hello {
			return transport.Hello{ProtoMin: transport.ProtoMin, ProtoMax: transport.ProtoMax, Purpose: transport.PurposeLink, App: AppName}
		},
		Authorize: func(id identity.DeviceID) transport.Decision {
			if _, ok := h.peers[id]; ok {
				return transport.AllowLink
			}
			return transport.Refuse
		},
		Log:      h.log,
		Refusals: rp.Refusals,
	})
	r.h, r.c = h, h.conv
	m.setActive(h)
	m.beginMu.Unlock()
	return 0, h.begin(ctx, rp, toks, maxTokens)
}

func (r *Request) Eval(ctx context.Context, toks []int32, pos int) ([]float32, error) {
	return r.h.eval(ctx, r.c, toks, pos)
}

// EvalAll is a speculative verification round the ring (head.Verifier):
// toks go as one pass of one batch through every window, k rounds as any
// pass, each window attending row by row so that every row is the bits of
// a one-row pass (ring.StartToken.Verify), and the head's output head
// returns the logits of every row.
func (r *Request) EvalAll(ctx context.Context, toks []int32, pos int) ([]float32, error) {
	if len(toks) == 0 || len(toks) > head.MaxDraftTokens+1 {
		return nil, fmt.Errorf("job: %d tokens to verify in one pass; give 1 to %d", len(toks), head.MaxDraftTokens+1)
	}
	h, c := r.h, r.c
	h.streams.mu.Lock()
	c.verifyAt = pos
	h.streams.mu.Unlock()
	defer func() {
		h.streams.mu.Lock()
		c.verifyAt = 0
		h.streams.mu.Unlock()
	}()
	return h.eval(ctx, c, toks, pos)
}

// Truncate forgets the positions >= pos (head.Verifier): the rejected
// drafts. Every device's windows truncate their caches when the next pass
// starts there (ggmlengine: a pass that starts before a cache's end
// overwrites it), so nothing goes on the wire for it.
func (r *Request) Truncate(_ context.Context, pos int) error {
	h, c := r.h, r.c
	h.streams.mu.Lock()
	defer h.streams.mu.Unlock()
	if pos < 0 || pos > len(c.all) || c.inflight > 0 {
		return fmt.Errorf("job: truncate at %d of %d positions (%d in flight)", pos, len(c.all), c.inflight)
	}
	c.all = c.all[:pos]
	c.pos = min(c.pos, pos)
	c.exactEnd = min(c.exactEnd, pos)
	return nil
}

// Finish ends the request that ended with err (nil: it went well) and
// returns the ring's part of its stats: the job ends, or, when it asked to
// be kept and its plan is up, is held idle for the next request. A request
// whose job never began, or that failed, has none.
func (r *Request) Finish(err error) Result {
	if r.h == nil {
		return Result{}
	}
	if r.c.stream != 0 {
		return r.h.finishStream(r.c, err)
	}
	return r.h.finish(err)
}

// Error is an error of the ring itself (its links, plan or driver), not of
// the request: the protocol's code "ring".
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ringError is an error of the ring itself.
func ringError(err error) error { return &Error{err} }

// ringErr is err of setting up a plan: ctx's error when it is cancelled
// (the request was stopped), else a ring error.
func (h *headJob) ringErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return ringError(err)
}

// start sets up the request's passes over prompt toks (either job).
func (h *headJob) start(toks []int32, maxTokens int) {
	h.nPrompt, h.reqStats, h.replanned = len(toks), Result{}, nil
	h.inflight, h.decodeMS, h.decodeN, h.lossAt = 0, 0, 0, time.Time{}
	// A fresh job's pass size, also on a kept job whose caches are bigger:
	// a kept job must compute what a fresh one does.
	info := h.rm.model.Info()
	h.passRows = ring.PassRows(prefillChunk, ring.Shape{NEmbd: info.NEmbd, NFF: info.NFF, NHead: info.NHead}, ring.JobContext(h.loadNCtx, len(toks), maxTokens), memLimit())
	if h.passRows < prefillChunk {
		h.log.Info("ring prefill passes shortened: memory is short", "rows", h.passRows)
	}
	h.mem, h.peak = newPressure(), memPeak{}
	h.tr = trace{}
	if h.drv != nil {
		h.tr.base = h.drv.Stats()
	}
	// Slices are served off the driver's loop: sample memory while nothing
	// else happens too.
	h.memTick = time.NewTicker(250 * time.Millisecond)
	// Until the plan is up, the workers fetch their slices from this
	// process: collect their garbage sooner.
	h.gc = debug.SetGCPercent(servingGC)
}

// begin starts a fresh job for a request with prompt toks: its driver, its
// plan installed and up on every device (nothing cached yet).
func (h *headJob) begin(ctx context.Context, rp Params, toks []int32, maxTokens int) error {
	h.nCtx = ring.JobContext(h.loadNCtx, len(toks), maxTokens)
	if h.keep > 0 {
		h.nCtx = ring.KeptContext(h.loadNCtx, len(toks), maxTokens)
	}
	// The output window's logits go to the generation loop, which samples
	// them (engine/head); a prefill pass that is not the last leaves
	// logits that are never read.
	h.eng = &ggmlengine.GGML{M: h.rm.model, NCtx: h.nCtx, Threads: h.threads, Sample: func(logits []float32) int32 {
		h.streams.last = logits // taken by streamEngine.Compute, on the same goroutine
		return 0
	}, Routing: newRoutingStore(h.identity, h.rm.srv.Model, h.rm.model.Info().NLayer, h.log)}
	h.start(toks, maxTokens)
	// The job's links and driver live as long as the job, which may
	// outlive this request (kept).
	jctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.ctx, h.cancel = jctx, cancel
	// The session's silence limits start from what earlier jobs of this
	// process saw of the same peers (gaps.go).
	h.sess = h.rm.gaps.session(h.self, h.tick, h.log)
	h.drv = driver.New(h.sess, streamEngine{h.eng, &h.streams}, h.tick, h.log)
	h.drv.NoPrefetch = h.noPrefetch
	h.drv.Refused = rp.Refusals
	h.runDone = make(chan error, 1)
	go func() { h.runDone <- h.drv.Run(jctx) }()
	h.all, h.pos, h.exactEnd = h.all[:0], 0, 0
	close(h.started) // requests that joined may read the driver now (streams.go)
	// Under the streams' lock, as a re-plan installs (handle): requests
	// that joined read the plan.
	h.streams.mu.Lock()
	err := h.install(ctx, rp)
	h.streams.mu.Unlock()
	if err != nil {
		err = h.ringErr(ctx, err)
		h.streams.fail(err) // requests that joined end with it
		return err
	}
	return h.await(ctx, h.conv)
}

// resume takes up a kept job, whose plan is up, for a request with prompt
// toks and returns how many of them its caches keep: only the passes a
// fresh job would compute alike. Batched passes round differently from
// other batches (on near-tie logits another token wins), so only the full
// passes from position 0 that the caches hold with the same tokens are
// kept; the prefill resumes at the first pass a fresh job would compute
// otherwise (at least the last one, for its logits). Every window
// truncates its cache there.
func (h *headJob) resume(toks []int32, maxTokens int) int {
	h.start(toks, maxTokens)
	h.streams.mu.Lock()
	h.streams.primaryDone, h.streams.keep = false, false
	h.streams.convs[0] = h.conv
	clear(h.streams.logits)
	h.streams.mu.Unlock()
	debug.SetGCPercent(h.gc)
	h.setIdle(false)
	h.micro = h.microRows(h.conv)
	h.pos = ring.KeptPrefix(h.kvToks, toks, h.exact, h.rows, h.micro)
	h.exactEnd = h.pos
	h.all = append(h.all[:0], toks[:h.pos]...)
	h.log.Info("ring job kept from the last request", "cached", h.pos, "prompt", len(toks))
	return h.pos
}

// eval runs toks at pos of conversation c round the ring, in passes
// (ring.PassEnd), and returns the output window's logits of the last.
func (h *headJob) eval(ctx context.Context, c *conv, toks []int32, pos int) ([]float32, error) {
	start := time.Now()
	h.streams.mu.Lock()
	c.all = append(c.all[:pos], toks...)
	var err error
	if h.up {
		// Else the plan's Ready starts it (await).
		err = h.startPass(ctx, c)
	}
	h.streams.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := h.await(ctx, c); err != nil {
		return nil, err
	}
	h.streams.mu.Lock()
	defer h.streams.mu.Unlock()
	now := time.Now()
	if pos >= c.nPrompt {
		c.decodeMS += ms(now.Sub(start))
		c.decodeN++
	}
	if !c.lossAt.IsZero() {
		c.reqStats.LossToTokenMS = ms(now.Sub(c.lossAt))
		h.log.Info("ring resumed after a loss", "loss_to_token", now.Sub(c.lossAt).Round(time.Millisecond), "stream", c.stream)
		c.lossAt = time.Time{}
	}
	return c.logits, nil
}

// startPass sends the next pass of conversation c round the ring
// (streams.mu held).
func (h *headJob) startPass(ctx context.Context, c *conv) error {
	msPerToken := 0.0
	if c.decodeN > 0 {
		msPerToken = c.decodeMS / float64(c.decodeN)
	}
	end := ring.PassEnd(c.pos, c.nPrompt, len(c.all), c.passRows, msPerToken)
	batch := c.micro
	// A verification is one pass of one batch (only a pass's last batch
	// gets the output head), computed row by row with every row's logits
	// (StartToken.Verify). A re-prefill after a loss comes back to it.
	verify := c.verifyAt > 0 && c.pos == c.verifyAt
	if verify {
		end, batch = len(c.all), 0
	}
	chunk := c.all[c.pos:end]
	if err := h.drv.Post(ctx, ring.StartToken{Tokens: slices.Clone(chunk), Pos: c.pos, Batch: batch, Verify: verify, Stream: c.stream}); err != nil {
		return err
	}
	if c.pos < c.nPrompt {
		if c.pos == 0 || c.tr.promptStart.IsZero() {
			c.tr.promptStart = time.Now()
		}
		c.tr.passes++
	}
	c.inflight = len(chunk)
	c.reqStats.Passes++
	c.reqStats.Rows += len(chunk)
	return nil
}

// done reports whether the windows hold the whole of conversation c
// (streams.mu held).
func (h *headJob) done(c *conv) bool { return h.up && c.inflight == 0 && c.pos >= len(c.all) }

// await waits until the plan is up and the windows hold the whole of
// conversation c. One goroutine at a time reads the driver's actions (the
// lead) and serves every stream's: it starts the passes of each one's
// (re-)prefill, asks for and installs a new plan when devices are lost,
// and wakes the stream whose pass came back; it hands the lead on when its
// own conversation is through.
func (h *headJob) await(ctx context.Context, c *conv) error {
	for {
		h.streams.mu.Lock()
		done, failed := h.done(c), h.streams.err
		h.streams.mu.Unlock()
		if failed != nil {
			return failed
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.wake:
			continue
		case h.streams.lead <- struct{}{}:
		}
		err := h.lead(ctx, c)
		<-h.streams.lead
		return err
	}
}

// lead reads the driver's actions until conversation c is through.
func (h *headJob) lead(ctx context.Context, c *conv) error {
	for {
		h.streams.mu.Lock()
		done := h.done(c)
		h.streams.mu.Unlock()
		if done {
			return nil
		}
		var a ring.Action
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-h.runDone:
			h.runDone <- err // for end
			err = ringError(fmt.Errorf("job: the ring stopped: %w", err))
			h.streams.fail(err) // every stream's request ends with it
			return err
		case <-h.memTick.C:
			h.sample()
			continue
		case a = <-h.drv.Out():
		}
		h.sample()
		if err := h.handle(ctx, a); err != nil {
			// A plan that could not be made or installed, or a pass
			// not started: the job is lost to every stream's request
			// (even when this one's was cancelled meanwhile).
			h.streams.fail(err)
			return err
		}
	}
}

// sample samples memory for the stats of every stream's request.
func (h *headJob) sample() {
	h.streams.mu.Lock()
	defer h.streams.mu.Unlock()
	h.mem.sample()
	h.peak.sample()
}

// handle carries out one of the driver's actions for every stream.
func (h *headJob) handle(ctx context.Context, a ring.Action) error {
	h.streams.mu.Lock()
	defer h.streams.mu.Unlock()
	switch a := a.(type) {
	case ring.Ready:
		// Every worker has its slice now: give back at once the Go heap
		// the transfers grew (the runtime would keep it for minutes, and
		// memory pressure counts it).
		debug.SetGCPercent(h.gc)
		debug.FreeOSMemory()
		h.up, h.tr.up = true, time.Now()
		clear(h.streams.logits)
		// A new plan has fresh windows: (re-)prefill every conversation.
		for _, c := range h.streams.sorted() {
			c.micro = h.microRows(c)
			c.pos, c.exactEnd, c.inflight = 0, 0, 0
			if len(c.all) > 0 {
				if err := h.startPass(ctx, c); err != nil {
					return err
				}
			}
		}
	case ring.Replan:
		h.up = false
		for _, c := range h.streams.sorted() {
			c.inflight = 0
			if c.lossAt.IsZero() {
				c.lossAt = time.Now()
			}
			c.reqStats.Replans++
		}
		h.log.Warn("ring lost devices; re-planning without them", "without", a.Without, "reason", a.Reason, "streams", len(h.streams.convs))
		rp, err := h.replan(h.plan, a.Without)
		if err == nil {
			debug.SetGCPercent(servingGC)
			err = h.install(ctx, rp)
		}
		if err != nil {
			return h.ringErr(ctx, err)
		}
	case ring.EmitToken:
		c := h.streams.convs[a.Stream]
		logits, ok := h.streams.logits[a.Seq]
		delete(h.streams.logits, a.Seq)
		if c == nil || c.inflight == 0 {
			return nil // a stream whose request ended
		}
		if !ok {
			return ringError(fmt.Errorf("job: the token of pass %d came without its logits", a.Seq))
		}
		c.logits = logits
		// The pass's full micro-batches are what a fresh job computes;
		// a short last one (the prompt's end) rounds differently.
		if c.pos == c.exactEnd && c.pos+c.inflight <= c.nPrompt {
			c.exactEnd += c.inflight / c.micro * c.micro
		}
		if c.pos < c.nPrompt && c.pos+c.inflight >= c.nPrompt {
			c.tr.promptAt = time.Now()
		}
		c.pos += c.inflight
		c.inflight = 0
		if c.pos < len(c.all) {
			if err := h.startPass(ctx, c); err != nil { // the next prefill pass
				return err
			}
		}
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// finish ends the request that ended with err: the job ended or, when it
// asked to be kept and its plan is up, held idle for the next (its windows
// hold the KV of every token evaluated so far; a pass still in flight adds
// to it). It returns the ring's part of the stats, none after an error.
func (h *headJob) finish(err error) Result {
	h.memTick.Stop()
	debug.SetGCPercent(h.gc)
	h.streams.mu.Lock()
	kept := err == nil && h.keep > 0 && h.up
	if kept {
		h.kvToks, h.exact, h.rows = slices.Clone(h.all[:h.pos]), h.exactEnd, h.micro
	}
	// Other streams' requests still running keep the job until the last
	// of them leaves (streams.go).
	delete(h.streams.convs, 0)
	h.streams.primaryDone, h.streams.keep = true, kept
	others := len(h.streams.convs)
	inflight := h.inflight > 0
	a := h.peak.at
	devices := h.deviceStats(h.plan, h.mem)
	// The request's result is read before the job is left: a kept job
	// may be resumed by the next request (one waiting for a stream, woken
	// by leaveLast) as soon as it is held.
	res := h.reqStats
	res.Devices = devices
	if h.replanned != nil {
		res.Lost, res.Plan = slices.Clone(h.lost), h.replanned
	}
	if h.plan != nil {
		res.PlanID = h.plan.ID
	}
	res.Trace = h.tr.result(h.micro)
	h.streams.mu.Unlock()
	kv, compute := h.eng.Memory()
	h.log.Info("ring job memory (peak anonymous and its parts)", "anon_mb", mb(a.Anon), "go_heap_mb", mb(a.GoHeap), "go_free_mb", mb(a.GoFree), "go_other_mb", mb(a.GoOther),
		"kv_mb", mb(kv), "compute_mb", mb(compute), "rest_mb", mb(a.Anon-a.GoHeap-a.GoOther-kv-compute), "kept", kept)
	if err == nil {
		h.log.Info("ring request trace", "dial_ms", res.Trace.DialMS, "prepare_ms", res.Trace.PrepareMS, "prompt_ms", res.Trace.PromptMS,
			"prompt_passes", res.Trace.PromptPasses, "micro_rows", res.Trace.MicroRows, "devices", devices)
	}
	if others == 0 {
		h.leaveLast(kept, inflight)
	}
	if err != nil {
		return Result{}
	}
	return res
}

// microRows is the micro-batch of this request's prefill passes on the
// installed plan (ring.PlanMicroRows): not pipelined when a device releases its
// windows' pages after each of k > 1 rounds.
func (h *headJob) microRows(c *conv) int {
	if !ringPipelined() {
		return c.passRows // one batch per pass (HOMERING_RING_PIPELINE=off)
	}
	return ring.PlanMicroRows(c.passRows, h.plan)
}

// servingGC is the head's GOGC while workers fetch slices from it (from
// installing a plan until it is up; no token is computed then): every
// chunk sent leaves its copies as garbage, and at the default 100 the heap
// grows to twice what is live before the collector runs (25 MB of Go heap
// at the peak of shipping the bench model's slices to two workers).
const servingGC = 25

// replan is the one re-plan after a loss, decided here: Halda over the
// job's problem without every device lost so far (ring.PlanWithout), and
// without the devices the agent gave no address: only it can ask a device
// to serve, so the ring goes on with those it holds links or addresses
// for. The survivors need no asking: their children serve any head of
// their paired devices until the job ends, and install's JobStart finds
// one that no longer does. prev is the plan it replaces.
func (h *headJob) replan(prev *wire.Plan, without []deviceid.ID) (Params, error) {
	for _, id := range without {
		if !slices.Contains(h.lost, id) {
			h.lost = append(h.lost, id)
		}
	}
	if h.problem == nil {
		return Params{}, fmt.Errorf("job: the ring lost %v and has no problem to re-plan from", without)
	}
	gone := slices.Clone(h.lost)
	for _, d := range h.problem.Devices[1:] {
		if _, ok := h.peers[d.ID]; !ok {
			gone = append(gone, d.ID)
		}
	}
	start := time.Now()
	q, plan, err := ring.PlanWithout(*h.problem, gone, lpsolve.Solver{})
	if err != nil {
		return Params{}, err
	}
	wp, err := ring.FromHalda(prev.ID+1, plan, prev.NEmbd)
	if err != nil {
		return Params{}, err
	}
	wp.DType = prev.DType
	h.problem, h.replanned = &q, &plan
	if n := int32(plan.Streams); n > 0 && n < h.streams.admit.Load() {
		// Streams running now go on; no new one joins beyond the plan's.
		h.streams.admit.Store(n)
	}
	rp := Params{Plan: wp}
	for _, d := range wp.Devices[1:] {
		rp.Peers = append(rp.Peers, h.peers[d.ID])
	}
	h.log.Info("ring re-planned without lost devices", "lost", h.lost, "devices", len(wp.Devices), "k", wp.K,
		"took", time.Since(start).Round(time.Microsecond))
	return rp, nil
}

// install connects the plan's workers and installs it. A worker that cannot
// be reached makes it ask for another plan without that worker.
func (h *headJob) install(ctx context.Context, rp Params) error {
	for {
		added := false
		for _, p := range rp.Peers {
			if old, ok := h.peers[p.ID]; !ok || old.Addr != p.Addr {
				added = true
			}
			h.peers[p.ID] = p
		}
		var lost []deviceid.ID
		for _, p := range h.connect(ctx, rp.Plan) {
			h.log.Warn("cannot reach a ring worker", "device", p.id, "err", p.err)
			lost = append(lost, p.id)
		}
		if len(lost) == 0 {
			for _, d := range rp.Plan.Devices[1:] {
				h.sent.Load().setTotal(d.ID, h.rm.srv.Need(held(d.Windows)))
			}
			if added {
				h.updatePeers(rp.Plan)
			}
			if err := h.drv.Post(ctx, ring.PlanInstalled{Plan: rp.Plan}); err != nil {
				return err
			}
			h.plan, h.up, h.tr.installed = rp.Plan, false, time.Now()
			h.log.Info("ring plan installed", "plan", ring.MsgString(rp.Plan))
			return nil
		}
		var err error
		if rp, err = h.replan(rp.Plan, lost); err != nil {
			return err
		}
		h.reqStats.Replans++
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
		h.rm.gaps.record(time.Now(), h.tick, h.sess.Gaps())
		stats := h.drv.Stats()
		delete(stats, h.self)
		h.rm.gaps.measured(stats)
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

// dialFailure is a worker connect could not reach or start the job on.
type dialFailure struct {
	id  deviceid.ID
	err error
}

// connect opens the head's link and slice connection to every worker of
// plan not connected yet, all at once (each is a few round trips: TLS,
// the job's start, TLS again; one after the other they added ~110 ms per
// worker on the rig's 5 ms links), and returns those it could not reach.
// ctx bounds the dials; the connections live as long as the job (h.ctx).
func (h *headJob) connect(ctx context.Context, plan *wire.Plan) []dialFailure {
	var need []Peer
	for _, d := range plan.Devices[1:] {
		if !h.connected[d.ID] || !h.drv.HasLink(d.ID) {
			need = append(need, h.peers[d.ID])
		}
	}
	if len(need) == 0 {
		return nil
	}
	defer func(start time.Time) { h.tr.dial += time.Since(start) }(time.Now())
	js := h.jobStart()
	type dialed struct {
		link, slices *transport.Conn
		err          error
	}
	res := make([]dialed, len(need))
	var wg sync.WaitGroup
	for i, p := range need {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i].link, res[i].slices, res[i].err = h.dial(ctx, p, js)
		}()
	}
	wg.Wait()
	var failed []dialFailure
	for i, p := range need {
		if res[i].err != nil {
			failed = append(failed, dialFailure{p.ID, res[i].err})
			continue
		}
		sc := res[i].slices
		h.slices = append(h.slices, sc)
		go func() {
			if err := h.rm.srv.ServeCounted(h.ctx, sc, func(n int64) { h.sent.Load().add(p.ID, n) }); err != nil {
				h.log.Warn("slice connection ended", "device", p.ID, "err", err)
			}
		}()
		h.drv.AddConn(h.ctx, p.ID, res[i].link)
		h.connected[p.ID] = true
	}
	return failed
}

// dial opens one worker's link, starts the job js there and opens its
// slice connection. It touches nothing of h but its endpoint: connect runs
// one per worker at once.
func (h *headJob) dial(ctx context.Context, p Peer, js *wire.JobStart) (link, slices *transport.Conn, err error) {
	if p.Addr == "" {
		return nil, nil, fmt.Errorf("job: no address for device %s", p.ID)
	}
	conn, err := h.ep.Dial(ctx, p.Addr, p.ID, transport.PurposeLink)
	if err != nil {
		return nil, nil, err
	}
	ack, err := roundTrip(ctx, conn, js, 10*time.Second)
	if err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("job: start the job on %s: %w", p.ID, err)
	}
	if a, ok := ack.(*wire.JobAck); !ok || a.Job != js.Job || a.Code != wire.CodeOK {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("job: device %s refused the job: %s", p.ID, ring.MsgString(ack))
	}
	sc, err := h.ep.Dial(ctx, p.Addr, p.ID, transport.PurposeSlice)
	if err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	return conn, sc, nil
}

func (h *headJob) jobStart() *wire.JobStart {
	js := &wire.JobStart{Job: h.job, Model: h.rm.srv.Model, NCtx: h.nCtx, NoPrefetch: h.noPrefetch, TickMS: int(h.tick / time.Millisecond)}
	for _, id := range slices.SortedFunc(maps.Keys(h.peers), deviceid.ID.Compare) {
		js.Peers = append(js.Peers, wire.Peer{ID: h.peers[id].ID, Addr: h.peers[id].Addr})
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

// deviceStats turns the driver's measurements into the request's DeviceStats.
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
		ds.VRAMUsed, ds.VRAMFree = int64(s.VRAMUsed), int64(s.VRAMFree)
		us, n, rows := promptPart(s, h.tr.base[d.ID])
		ds.PromptMS, ds.Prompts, ds.PromptRows = float64(us)/1000, int(n), int(rows)
		if i == 0 {
			ds.MemPressure = mem.max
			ds.VRAMUsed, ds.VRAMFree = h.eng.GPUMemory()
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

// transferProgress counts the weight bytes sent to each worker and tells
// report, at most every progressEvery per worker and once at the total.
type transferProgress struct {
	report func(Progress) // nil: nobody listens

	mu    sync.Mutex
	done  map[deviceid.ID]int64
	total map[deviceid.ID]int64
	last  map[deviceid.ID]time.Time
}

const progressEvery = 200 * time.Millisecond

func newTransferProgress(report func(Progress)) *transferProgress {
	return &transferProgress{report: report, done: map[deviceid.ID]int64{}, total: map[deviceid.ID]int64{}, last: map[deviceid.ID]time.Time{}}
}

func (t *transferProgress) setTotal(dev deviceid.ID, n int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total[dev] = n
}

func (t *transferProgress) add(dev deviceid.ID, n int64) {
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
	if t.report != nil {
		t.report(Progress{Device: dev, Done: done, Total: max(total, done)})
	}
}
