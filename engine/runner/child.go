package runner

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	"homering/discovery/identity"
	"homering/engine/head"
	"homering/engine/llama"
	"homering/engine/ring/job"
	"homering/engine/ring/transport"
)

// Serve is the child's loop: it answers Requests read from in with Events
// written to out until in ends or ctx is cancelled. It owns at most one
// engine/head at a time and runs one generation at a time, except that a
// ring_generate on the ring model of the ring generations running joins
// them: their requests go round one ring at once (engine/ring/job's
// streams).
func Serve(ctx context.Context, in io.Reader, out io.Writer, log *slog.Logger) error {
	c := &child{out: json.NewEncoder(out), w: out, log: log}
	defer c.unload()
	defer c.stopServing()
	if err := c.send(Event{Type: EvHello, Proto: Proto, PID: os.Getpid()}); err != nil {
		return err
	}
	rctx, stopReports := context.WithCancel(ctx)
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		c.reportRefusals(rctx)
	}()
	defer func() { stopReports(); <-reported }()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	lines := make(chan []byte)
	scanErr := make(chan error, 1)
	go func() {
		defer close(lines)
		for sc.Scan() {
			b := append([]byte(nil), sc.Bytes()...)
			select {
			case lines <- b:
			case <-ctx.Done():
				return
			}
		}
		scanErr <- sc.Err()
	}()
	for {
		select {
		case <-ctx.Done():
			c.stopAndWait()
			return ctx.Err()
		case line, ok := <-lines:
			if !ok {
				c.stopAndWait() // the parent closed our stdin: it is gone or done with us
				select {
				case err := <-scanErr:
					return err
				default:
					return nil
				}
			}
			c.handle(ctx, line)
		}
	}
}

type child struct {
	mu  sync.Mutex // guards out
	out *json.Encoder
	w   io.Writer
	log *slog.Logger

	h    *head.Head // nil when no model is loaded; touched only when gen is nil
	info ModelInfo

	genMu sync.Mutex // guards gens
	gens  map[uint64]*running

	// rh is the head's ring model; touched only when no generation runs or
	// by a ring generation with rhMu held.
	rhMu sync.Mutex
	rh   *job.Head
	// draft is the speculative draft of the last request that named one
	// (LoadParams.Draft), kept while its path, context and threads stay;
	// touched only when gen is nil or by the generation.
	draft    *head.Head
	draftKey LoadParams
	load     LoadParams // the loaded model's (OpLoad)
	// rhFile is rh's model file as it was when mapped.
	rhFile os.FileInfo

	srv     *job.Worker // worker side, nil when not serving; touched by handle only
	serveID uint64

	gaps job.Gaps // peers' silences in earlier ring jobs, head and worker

	// refused counts what the ring's links refuse, head and worker;
	// reportRefusals tells the parent (EvRefused).
	refused transport.Refusals
}

// refusalsEvery is how often the child tells its parent what its ring links
// refused since it last told (EvRefused): a flood of refused frames is one
// line a second on the pipe, not one a frame.
const refusalsEvery = time.Second

// reportRefusals sends EvRefused with the counts since the previous one,
// when there are any, every refusalsEvery and once more when ctx ends.
func (c *child) reportRefusals(ctx context.Context) {
	t := time.NewTicker(refusalsEvery)
	defer t.Stop()
	told := map[string]uint64{}
	tell := func() {
		var since map[string]uint64
		for reason, n := range c.refused.Snapshot() {
			if n > told[reason] {
				if since == nil {
					since = map[string]uint64{}
				}
				since[reason] = n - told[reason]
				told[reason] = n
			}
		}
		if since != nil {
			_ = c.send(Event{Type: EvRefused, Refused: since})
		}
	}
	for {
		select {
		case <-ctx.Done():
			tell()
			return
		case <-t.C:
			tell()
		}
	}
}

func (c *child) send(ev Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Encode(ev) // Encode ends the line
}

func (c *child) fail(id uint64, code string, err error) {
	_ = c.send(errorEvent(id, code, err))
}

// errorEvent is the error event of request id: its code says what failed,
// its text is err for a person, without the Go package names that wrapped
// it on the way up ("ggml: gguf: the file ends early" is "the file ends
// early"). The one place an engine error is worded for the parent.
func errorEvent(id uint64, code string, err error) Event {
	return Event{ID: id, Type: EvError, Code: code, Error: errorText(err.Error())}
}

// errorText drops the leading package prefixes of the engine's packages.
func errorText(s string) string {
	for {
		pkg, rest, ok := strings.Cut(s, ": ")
		if !ok || !enginePackage(pkg) {
			return s
		}
		s = rest
	}
}

func enginePackage(name string) bool {
	switch name {
	case "ggml", "gguf", "runner", "job", "slice", "driver", "ring", "wire", "transport", "head", "halda", "lpsolve", "profile", "llama":
		return true
	}
	return false
}

// running is a generation in the background.
type running struct {
	done   chan struct{}
	cancel context.CancelFunc
	ring   string // a ring generation's model path; "" for a local one
}

// busy reports whether a generation runs.
func (c *child) busy() bool {
	c.genMu.Lock()
	defer c.genMu.Unlock()
	return len(c.gens) > 0
}

// joinsRing reports whether a ring generation on model may run beside
// those running now: every one running is a ring generation on model.
func (c *child) joinsRing(model string) bool {
	c.genMu.Lock()
	defer c.genMu.Unlock()
	if len(c.gens) == 0 || model == "" {
		return false
	}
	for _, g := range c.gens {
		if g.ring != model {
			return false
		}
	}
	return true
}

func (c *child) handle(ctx context.Context, line []byte) {
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		c.fail(0, CodeBadRequest, fmt.Errorf("runner: request is not JSON: %w", err))
		return
	}
	switch req.Op {
	case OpStop:
		if c.srv != nil && req.Target != 0 && req.Target == c.serveID {
			c.stopServing()
			return
		}
		c.genMu.Lock()
		for id, g := range c.gens {
			if req.Target == 0 || req.Target == id {
				g.cancel()
			}
		}
		c.genMu.Unlock()
		return
	case OpServeRing:
		// Serving runs beside generations: a device may head one job
		// while it works for another head.
		if req.Serve == nil {
			c.fail(req.ID, CodeBadRequest, errors.New("runner: serve_ring needs parameters"))
			return
		}
		c.stopServing()
		sp := *req.Serve
		sp.OnServing = func(st job.Serving) { _ = c.send(Event{ID: req.ID, Type: EvJob, Serving: &st}) }
		sp.Refusals = &c.refused
		srv, err := job.StartWorker(ctx, sp, &c.gaps, lowerPriority, c.log)
		if err != nil {
			c.fail(req.ID, CodeRing, err)
			return
		}
		c.srv, c.serveID = srv, req.ID
		_ = c.send(Event{ID: req.ID, Type: EvServing, Addr: srv.Addr()})
		return
	}
	if req.Op == OpRingGenerate && req.Load != nil && c.joinsRing(req.Load.Model) {
		c.startGen(ctx, req.ID, req.Load.Model, func(gctx context.Context) Event { return c.ringGenerate(gctx, req.ID, req, true) })
		return
	}
	if c.busy() {
		c.fail(req.ID, CodeBusy, errors.New("runner: a generation is running; stop it first"))
		return
	}
	switch req.Op {
	case OpLoad:
		if req.Load == nil || req.Load.Model == "" {
			c.fail(req.ID, CodeBadRequest, errors.New("runner: load needs a model path"))
			return
		}
		c.unload()
		start := time.Now()
		h, err := head.Open(head.Config{ModelPath: req.Load.Model, NCtx: req.Load.NCtx, Threads: req.Load.Threads,
			GPULayers: req.Load.GPULayers, OutputGPU: req.Load.OutputGPU, Logger: c.log})
		if err != nil {
			c.fail(req.ID, CodeLoad, err)
			return
		}
		c.h = h
		mi := h.Info()
		c.info = ModelInfo{Path: req.Load.Model, Arch: mi.Arch, Layers: mi.NLayer, NCtx: h.NCtx(), Vocab: mi.NVocab}
		c.load = *req.Load
		c.log.Info("model loaded", "path", req.Load.Model, "ctx", h.NCtx(), "took", time.Since(start).Round(time.Millisecond))
		info := c.info
		_ = c.send(Event{ID: req.ID, Type: EvLoaded, Model: &info})
	case OpUnload:
		c.unload()
		_ = c.send(Event{ID: req.ID, Type: EvUnloaded})
	case OpRingEnd:
		c.rh.EndKept()
		_ = c.send(Event{ID: req.ID, Type: EvEnded})
	case OpRingGenerate:
		model := ""
		if req.Load != nil {
			model = req.Load.Model
		}
		c.startGen(ctx, req.ID, model, func(gctx context.Context) Event { return c.ringGenerate(gctx, req.ID, req, false) })
	case OpGenerate:
		if c.h == nil {
			c.fail(req.ID, CodeNotLoaded, errors.New("runner: no model is loaded; send load first"))
			return
		}
		if req.Generate == nil {
			c.fail(req.ID, CodeBadRequest, errors.New("runner: generate needs parameters"))
			return
		}
		g := *req.Generate
		c.startGen(ctx, req.ID, "", func(gctx context.Context) Event { return c.generate(gctx, req.ID, g) })
	default:
		c.fail(req.ID, CodeBadRequest, fmt.Errorf("runner: unknown op %q", req.Op))
	}
}

// startGen runs a generation in the background (ring: a ring
// generation's model path); run returns the event that ends it.
func (c *child) startGen(ctx context.Context, id uint64, ring string, run func(context.Context) Event) {
	gctx, cancel := context.WithCancel(ctx)
	g := &running{done: make(chan struct{}), cancel: cancel, ring: ring}
	c.genMu.Lock()
	if c.gens == nil {
		c.gens = map[uint64]*running{}
	}
	c.gens[id] = g
	c.genMu.Unlock()
	go func() {
		defer close(g.done)
		defer cancel()
		final := run(gctx)
		// Idle before the last event goes out: the parent may send the
		// next request the moment it reads it.
		c.genMu.Lock()
		delete(c.gens, id)
		c.genMu.Unlock()
		_ = c.send(final)
	}()
}

// stopServing ends the worker side, if it runs, and answers its serve_ring
// with done.
func (c *child) stopServing() {
	if c.srv == nil {
		return
	}
	c.srv.Stop()
	_ = c.send(Event{ID: c.serveID, Type: EvDone, Stats: &Stats{Reason: ReasonCancelled}})
	c.srv, c.serveID = nil, 0
}

// generate runs one generation on the loaded model, streaming token
// events, and returns the event that ends it (done or error).
func (c *child) generate(ctx context.Context, id uint64, g GenerateParams) Event {
	start := time.Now()
	if err := g.sampling().Validate(); err != nil {
		return errorEvent(id, CodeBadRequest, err)
	}
	draft, err := c.draftFor(c.load.Model, greedyDraft(c.load.Draft, g), c.h.NCtx(), c.load.Threads)
	if err != nil {
		return errorEvent(id, CodeLoad, err)
	}
	st, err := c.generation(ctx, id, c.h, c.h.Vocab(), c.h.NCtx(), g, draft, start)
	if err != nil {
		return errorEvent(id, errorCode(err), err)
	}
	return Event{ID: id, Type: EvDone, Stats: &st}
}

// ringGenerate runs one generation as the head of a ring job
// (engine/ring/job): the ring's model mapped (kept between requests), the
// request checked, and the one generation loop run on the job. joined: it
// runs beside other ring generations on the same model, as another stream
// of their job, without a speculative draft (the draft model serves one
// request at a time).
func (c *child) ringGenerate(ctx context.Context, id uint64, req Request, joined bool) Event {
	start := time.Now()
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
	rp := *req.Ring
	if rp.KeepMS < 0 || rp.KeepMS > maxKeepMS {
		return fail(CodeBadRequest, fmt.Errorf("runner: keeping a ring job %d ms is out of range; give 0-%d ms", rp.KeepMS, maxKeepMS))
	}
	c.rhMu.Lock()
	now := statModel(req.Load.Model)
	if c.rh == nil || c.rh.Path() != req.Load.Model || !joined && !sameModel(now, c.rhFile) {
		// A file changed since it was mapped is mapped afresh, and so
		// checked again (modelfile.go); not under generations that run
		// on it.
		c.rh.Close()
		c.rh = nil
		rh, err := job.OpenHead(req.Load.Model, &c.gaps, c.log)
		if err != nil {
			c.rhMu.Unlock()
			return fail(CodeLoad, err)
		}
		c.rh, c.rhFile = rh, now
	}
	rh := c.rh
	c.rhMu.Unlock()
	ident, err := identity.LoadOrCreate(rp.Identity, time.Now(), crand.Reader)
	if err != nil {
		return fail(CodeRing, err)
	}
	nCtx := head.ContextSize(req.Load.NCtx, rh.NCtxTrain())
	r, err := rh.Request(job.Params{Plan: rp.Plan, Problem: rp.Problem, Peers: rp.Peers, Identity: rp.Identity,
		NoPrefetch: rp.NoPrefetch, TickMS: rp.TickMS, KeepMS: rp.KeepMS, Streams: rp.Streams, Threads: req.Load.Threads, Refusals: &c.refused}, nCtx, ident,
		func(p Progress) { _ = c.send(Event{ID: id, Type: EvProgress, Progress: &p}) })
	if err != nil {
		return fail(CodeBadRequest, err)
	}
	var draft *head.Head
	if !joined {
		if draft, err = c.draftFor(req.Load.Model, greedyDraft(req.Load.Draft, g), nCtx, req.Load.Threads); err != nil {
			r.Finish(err)
			return fail(CodeLoad, err)
		}
	}
	st, err := c.generation(ctx, id, r, rh.Vocab(), nCtx, g, draft, start)
	res := r.Finish(err)
	if err != nil {
		return errorEvent(id, errorCode(err), err)
	}
	st.Devices, st.Replans, st.Lost, st.Plan, st.PlanID = res.Devices, res.Replans, res.Lost, res.Plan, res.PlanID
	st.LossToTokenMS, st.Passes, st.Rows, st.Trace = res.LossToTokenMS, res.Passes, res.Rows, res.Trace
	return Event{ID: id, Type: EvDone, Stats: &st}
}

// draftFor is the speculative draft at path for the model at target with
// a context of nCtx and threads, opened once and kept (nil for path "").
// Its vocabulary must be the target's.
func (c *child) draftFor(target, path string, nCtx, threads int) (*head.Head, error) {
	if path == "" {
		return nil, nil
	}
	key := LoadParams{Model: target, Draft: path, NCtx: nCtx, Threads: threads}
	if c.draft != nil && c.draftKey == key {
		return c.draft, nil
	}
	c.closeDraft()
	same, err := head.SameVocabulary(target, path)
	if err != nil {
		return nil, err
	}
	if !same {
		return nil, fmt.Errorf("runner: the draft model %s has another vocabulary than %s; choose a draft of the same model family", path, target)
	}
	d, err := head.Open(head.Config{ModelPath: path, NCtx: nCtx, Threads: threads, Logger: c.log})
	if err != nil {
		return nil, err
	}
	c.draft, c.draftKey = d, key
	return d, nil
}

// greedyDraft is the draft path of request g: only greedy requests
// speculate (engine/head), so the others need no draft opened.
func greedyDraft(path string, g GenerateParams) string {
	if g.Temperature > 0 {
		return ""
	}
	return path
}

func (c *child) closeDraft() {
	if c.draft != nil {
		_ = c.draft.Close()
		c.draft, c.draftKey = nil, LoadParams{}
	}
}

// maxKeepMS bounds RingParams.KeepMS: an hour.
const maxKeepMS = 3600 * 1000

// generation runs the one generation loop (engine/head.Run) of generate
// and ring_generate on m, streaming token events, and returns its stats
// with the reason it ended, or the error that ended it. start is when the
// request came.
func (c *child) generation(ctx context.Context, id uint64, m head.Model, v *llama.Vocab, nCtx int, g GenerateParams, draft *head.Head, start time.Time) (Stats, error) {
	req := head.Request{Messages: g.messages(), Opening: g.Opening, Prompt: g.Prompt, MaxTokens: g.MaxTokens, Sampling: g.sampling(), Seed: g.Seed}
	// Before m begins: a grammar that cannot be built costs a ring no
	// links or weights.
	gr, err := newGrammar(v, g)
	if err != nil {
		return Stats{}, codedError{CodeBadRequest, err}
	}
	if gr != nil {
		defer gr.Close()
		req.Constraint = gr
	}
	if draft != nil {
		req.Draft = draft // greedy requests speculate (engine/head)
	}
	eog := false
	hs, err := head.Run(ctx, m, v, nCtx, req, func(t head.Token) error {
		eog = t.EOG
		if err := c.send(Event{ID: id, Type: EvToken, Token: &Token{ID: t.ID, Text: t.Text, EOG: t.EOG}}); err != nil {
			return fmt.Errorf("%w: %w", errParentGone, err)
		}
		return nil
	})
	st := Stats{PromptTokens: hs.PromptTokens, CachedTokens: hs.CachedTokens, CompletionTokens: hs.Tokens,
		PromptMS: ms(hs.PromptTime), DecodeTokens: hs.DecodeTokens, DecodeMS: ms(hs.DecodeTime), TotalMS: ms(time.Since(start)),
		Drafted: hs.Drafted, Accepted: hs.Accepted}
	if !hs.Started.IsZero() {
		st.StartMS = ms(hs.Started.Sub(start))
	}
	switch {
	case err == nil && eog:
		st.Reason = ReasonStop
	case err == nil:
		st.Reason = ReasonLength
	case errors.Is(err, context.Canceled), errors.Is(err, errParentGone):
		// A parent that stops reading has gone or stopped the request.
		st.Reason = ReasonCancelled
	default:
		return st, err
	}
	return st, nil
}

// newGrammar builds the grammar g asks for over v, or nil when it asks
// for none.
func newGrammar(v *llama.Vocab, g GenerateParams) (*llama.Grammar, error) {
	gbnf := g.Grammar
	switch {
	case len(g.JSONSchema) > 0 && gbnf != "":
		return nil, errors.New("runner: a generate gives a grammar or a JSON schema, not both")
	case len(g.JSONSchema) > 0:
		var err error
		if gbnf, err = llama.SchemaGrammar(g.JSONSchema); err != nil {
			return nil, err
		}
		if g.Call != nil {
			gbnf = asCall(gbnf, g.Call.Before, g.Call.After)
		}
	case gbnf == "":
		return nil, nil
	}
	return llama.NewGrammar(v, gbnf)
}

// schemaRoot and schemaSpace are the root rule's and the whitespace
// rule's definitions in json-schema-to-grammar's GBNF.
var (
	schemaRoot  = regexp.MustCompile(`(?m)^root ::=`)
	schemaSpace = regexp.MustCompile(`(?m)^space ::=.*$`)
)

// asCall makes gbnf's reply the literal before, then gbnf's, then the
// literal after: its root rule is renamed and a new root wraps it. The
// JSON is written on one line, as the templates write calls: the schema's
// whitespace (up to two newlines and 20 blanks between tokens) lets a
// model that is unsure spend its tokens on blanks. (A schema that refers
// to itself, "$ref": "#", would now refer to the wrapper; the forced
// calls' schemas are tools' parameters, not whole-document references.)
func asCall(gbnf, before, after string) string {
	body := schemaRoot.ReplaceAllString(gbnf, "schema-root ::=")
	body = schemaSpace.ReplaceAllString(body, `space ::= | " "`)
	return "root ::= " + gbnfLiteral(before) + "schema-root " + gbnfLiteral(after) + "\n" + body
}

// gbnfLiteral is s as a GBNF string literal and a space, "" for an empty s.
func gbnfLiteral(s string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString(`" `)
	return b.String()
}

// errParentGone is an event that could not be sent.
var errParentGone = errors.New("runner: the parent does not read events")

// codedError is an error whose code is not errorCode's default.
type codedError struct {
	code string
	err  error
}

func (e codedError) Error() string { return e.err.Error() }
func (e codedError) Unwrap() error { return e.err }

// errorCode is the code of an error that ended a generation: a codedError's,
// bad_request for a prompt that cannot run, else generate.
func errorCode(err error) string {
	var ce codedError
	switch {
	case errors.As(err, &ce):
		return ce.code
	case errors.As(err, new(*job.Error)):
		return CodeRing // the ring itself: its links, plan or driver
	case errors.Is(err, head.ErrEmptyPrompt), errors.Is(err, head.ErrTooLong), errors.Is(err, head.ErrConstraint):
		return CodeBadRequest
	}
	return CodeGenerate
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (c *child) stopAndWait() {
	c.genMu.Lock()
	var done []chan struct{}
	for _, g := range c.gens {
		g.cancel()
		done = append(done, g.done)
	}
	c.genMu.Unlock()
	for _, d := range done {
		<-d
	}
}

func (c *child) unload() {
	c.stopAndWait()
	c.rh.Close()
	c.rh = nil
	c.closeDraft()
	if c.h != nil {
		if err := c.h.Close(); err != nil {
			c.log.Warn("closing the model", "err", err)
		}
		c.h = nil
	}
}

// Main is `homering runner`: it moves file descriptor 1 out of the engine's
// reach (C code that prints goes to stderr) and serves the protocol on the
// original stdout.
func Main(ctx context.Context, stdin io.Reader, log *slog.Logger) error {
	if dir := os.Getenv(EnvGPUProbe); dir != "" {
		return probeMain(dir, os.Stdout) // a GPU probe (LoadGPU's child), not a runner
	}
	proto, err := protocolStdout()
	if err != nil {
		return fmt.Errorf("runner: set up stdout: %w", err)
	}
	defer proto.Close()
	// After stdout moved: backends print as they load.
	// The probe child takes a crashing driver's fall, not the runner.
	LoadGPU(GPUOptions{Probe: true}, log)
	// One P more than the CPUs. A ring link's reader and writer have
	// threads of their own at nice 0 (engine/ring/driver), but Go code
	// still needs a P to run: with one P per CPU, goroutines hashing a
	// slice (or the GC) hold them all, on threads lowered to nice 10 that
	// CPU burners keep off the CPU, and a pong waits until one of those
	// runs again (bench/pingload.sh: p99 0.76 s under 3 burners). The
	// engine's compute is C threads, which GOMAXPROCS does not count.
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	return Serve(ctx, stdin, proto, log)
}
