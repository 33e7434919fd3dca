package runner

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"homering/discovery/identity"
	"homering/engine/ggml"
	"homering/engine/gguf"
	"homering/engine/ring"
	"homering/engine/ring/driver"
	"homering/engine/ring/transport"
	"homering/engine/ring/wire"
	"homering/engine/slice"
)

// server is the worker side of the ring in the child: a listener with the
// device's identity that runs the jobs heads start, one at a time.
type server struct {
	sp    ServeParams
	self  string
	ep    *transport.Endpoint
	ln    net.Listener
	log   *slog.Logger
	allow map[string]bool

	cancel context.CancelFunc
	done   chan struct{} // closed when Serve and every job have ended

	mu  sync.Mutex
	job *workerJob // guarded by mu; nil between jobs
	wg  sync.WaitGroup
}

// startServer listens and serves in the background.
func startServer(ctx context.Context, sp ServeParams, log *slog.Logger) (*server, error) {
	if sp.CacheDir == "" || sp.Identity == "" {
		return nil, errors.New("runner: serve_ring needs an identity directory and a cache directory")
	}
	ident, err := identity.LoadOrCreate(sp.Identity, time.Now(), crand.Reader)
	if err != nil {
		return nil, err
	}
	s := &server{sp: sp, self: ident.ID.String(), log: log.With("ring", "worker"), allow: map[string]bool{}, done: make(chan struct{})}
	for _, a := range sp.Allowed {
		id, _, err := canonicalID(a)
		if err != nil {
			return nil, err
		}
		s.allow[id] = true
	}
	s.ep = transport.New(transport.Config{
		Identity: ident,
		Hello: func() transport.Hello {
			return transport.Hello{ProtoMin: wire.ProtoMin, ProtoMax: wire.ProtoMax, Purpose: transport.PurposeLink, App: AppName}
		},
		Authorize: func(id identity.DeviceID) transport.Decision {
			if s.allow[id.String()] || s.inJob(id.String()) {
				return transport.AllowLink
			}
			return transport.Refuse
		},
		Log: s.log,
	})
	listen := sp.Listen
	if listen == "" {
		listen = "[::]:0"
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("runner: listen for the ring on %s: %w", listen, err)
	}
	s.ln = ln
	// A contributing device must not slow its owner down: lower the CPU
	// priority of every thread (ggml's thread pool, made later by the
	// first job, inherits it).
	if err := lowerPriority(); err != nil {
		s.log.Warn("cannot lower the CPU priority", "err", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	go func() {
		defer close(s.done)
		if err := s.ep.Serve(sctx, ln, s.handle); err != nil {
			s.log.Error("ring listener failed", "err", err)
		}
		s.endJob()
		s.wg.Wait()
	}()
	s.log.Info("serving the ring", "addr", ln.Addr().String(), "device", s.self)
	return s, nil
}

// stop ends serving: the job in flight ends (its windows close) and the
// listener closes.
func (s *server) stop() {
	s.cancel()
	<-s.done
}

// inJob reports whether id is a device of the job in flight. A person pairs
// each worker with the head, not the workers with each other; the head
// (paired, so trusted) names the job's devices by certificate hash, which
// is enough to admit the predecessor's activation link for this job only.
func (s *server) inJob(id string) bool {
	s.mu.Lock()
	j := s.job
	s.mu.Unlock()
	return j != nil && j.knows(id)
}

func (s *server) endJob() {
	s.mu.Lock()
	j := s.job
	s.mu.Unlock()
	if j != nil {
		j.cancel()
		<-j.done
	}
}

func (s *server) handle(ctx context.Context, c *transport.Conn) {
	peer := c.Peer.String()
	if c.Hello.Purpose == transport.PurposeSlice {
		s.mu.Lock()
		j := s.job
		s.mu.Unlock()
		if j == nil || j.head != peer {
			c.Close()
			return
		}
		select {
		case j.sliceConns <- c:
		default:
			c.Close() // one slice connection per job
		}
		return
	}
	m, err := recvOne(ctx, c, 10*time.Second)
	if err != nil {
		s.log.Info("ring link without a job message", "peer", peer, "err", err)
		c.Close()
		return
	}
	switch m := m.(type) {
	case *wire.JobStart:
		s.startJob(ctx, peer, c, m)
	case *wire.JobLink:
		s.mu.Lock()
		j := s.job
		s.mu.Unlock()
		if j == nil || j.id != m.Job || !j.knows(peer) {
			s.log.Info("ring link for no job of this device", "peer", peer, "job", m.Job)
			c.Close()
			return
		}
		j.drv.AddConn(j.ctx, peer, c)
	default:
		s.log.Info("unexpected first ring message", "peer", peer, "msg", ring.MsgString(m))
		c.Close()
	}
}

func (s *server) startJob(ctx context.Context, head string, c *transport.Conn, js *wire.JobStart) {
	refuse := func(text string) {
		if typ, p, err := wire.Encode(&wire.JobAck{Job: js.Job, Code: wire.CodeBadPlan, Text: text}); err == nil {
			_ = c.Send(transport.Frame{Type: transport.MsgType(typ), Payload: p})
		}
		c.Close()
	}
	s.mu.Lock()
	old := s.job
	s.mu.Unlock()
	if old != nil {
		if old.head != head {
			refuse("this device is serving another head's job")
			return
		}
		// The same head starts over (it lost its previous job): end that one.
		old.cancel()
		<-old.done
	}
	jctx, cancel := context.WithCancel(ctx)
	j := &workerJob{s: s, id: js.Job, head: head, model: js.Model, nCtx: js.NCtx, ctx: jctx, cancel: cancel,
		done: make(chan struct{}), sliceConns: make(chan *transport.Conn, 1), peers: map[string]string{}, log: s.log.With("job", js.Job)}
	j.setPeers(js.Peers)
	j.eng = &workerEngine{j: j, g: &driver.GGML{NCtx: js.NCtx, Threads: s.sp.Threads}}
	// Tick as the head does, so both sides call the other lost after the
	// same silence.
	tick := time.Duration(js.TickMS) * time.Millisecond
	j.drv = driver.New(ring.New(s.self, js.TickMS), j.eng, tick, j.log)
	j.drv.NoPrefetch = js.NoPrefetch
	j.drv.Measure = j.eng.measures
	j.drv.OnJobMsg = func(from string, m wire.Msg) {
		if u, ok := m.(*wire.JobStart); ok && from == head && u.Job == j.id {
			j.setPeers(u.Peers)
		}
	}
	s.mu.Lock()
	s.job = j
	s.mu.Unlock()
	typ, p, _ := wire.Encode(&wire.JobAck{Job: js.Job, Code: wire.CodeOK})
	if err := c.Send(transport.Frame{Type: transport.MsgType(typ), Payload: p}); err != nil {
		cancel()
	}
	j.drv.AddConn(jctx, head, c)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		j.run()
		s.mu.Lock()
		if s.job == j {
			s.job = nil
		}
		s.mu.Unlock()
	}()
}

// workerJob is one ring job on a worker.
type workerJob struct {
	s      *server
	id     uint64
	head   string
	model  [32]byte
	nCtx   int
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	log    *slog.Logger
	drv    *driver.Driver
	eng    *workerEngine

	sliceConns chan *transport.Conn

	mu    sync.Mutex
	peers map[string]string // device → ring address; guarded by mu
}

func (j *workerJob) setPeers(ps []wire.Peer) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, p := range ps {
		j.peers[p.ID] = p.Addr
	}
}

func (j *workerJob) knows(id string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, ok := j.peers[id]
	return ok
}

func (j *workerJob) addr(id string) string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.peers[id]
}

// run drives the job until the head ends it or goes away, then frees
// everything it held: links, windows, the mapped slice.
func (j *workerJob) run() {
	defer close(j.done)
	j.log.Info("ring job started", "head", j.head)
	runDone := make(chan error, 1)
	go func() { runDone <- j.drv.Run(j.ctx) }()
	reason := "stopped serving"
	// The session notices a lost head once a plan is installed; before
	// that, a closed head link alone ends the job.
	check := time.NewTicker(time.Second)
	defer check.Stop()
loop:
	for {
		select {
		case <-j.ctx.Done():
			break loop
		case <-check.C:
			if !j.drv.HasLink(j.head) {
				reason = "the head's link closed"
				break loop
			}
		case err := <-runDone:
			runDone <- err
			reason = fmt.Sprintf("the ring stopped: %v", err)
			break loop
		case a := <-j.drv.Out():
			switch a := a.(type) {
			case ring.EndJob:
				reason = a.Reason
				break loop
			case ring.Ready:
				j.log.Debug("ring plan up", "plan", a.Plan)
			}
		}
	}
	j.cancel()
	<-runDone
	j.drv.CloseLinks()
	j.eng.Close()
	j.eng.closeSlices()
	j.log.Info("ring job ended; windows closed", "reason", reason)
}

// workerEngine is a worker's driver.Engine: Prepare fetches the slice of
// the plan's windows from the head (or finds it in the cache), maps it and
// opens the windows, and links this device to its successor.
type workerEngine struct {
	j *workerJob
	g *driver.GGML // g.M: the mapped slice, nil before the first plan

	path  string // of the mapped slice
	src   *driver.ConnSource
	index *gguf.File
	hash  map[string][32]byte
	mem   *pressure

	mu                sync.Mutex // guards fetched, sliceBytes (read by the driver's loop)
	fetched, sliceLen int64
}

func (e *workerEngine) measures() driver.Measures {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := driver.Measures{Fetched: e.fetched, SliceBytes: e.sliceLen}
	if e.mem != nil {
		m.Pressure = e.mem.sample()
	}
	return m
}

// Prepare runs on the driver's engine goroutine.
func (e *workerEngine) Prepare(plan *wire.Plan, idx int) error {
	if idx <= 0 {
		return fmt.Errorf("runner: this device is not a worker of plan %d", plan.ID)
	}
	if e.mem == nil {
		p := newPressure()
		e.mu.Lock()
		e.mem = p
		e.mu.Unlock()
	}
	ctx := e.j.ctx
	if e.src == nil {
		var c *transport.Conn
		select {
		case c = <-e.j.sliceConns:
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(30 * time.Second):
			return errors.New("runner: the head opened no slice connection")
		}
		e.src = &driver.ConnSource{C: c, Model: e.j.model}
		g, h, err := e.src.FetchIndex(ctx)
		if err != nil {
			return fmt.Errorf("runner: fetch the model index from the head: %w", err)
		}
		e.index, e.hash = g, h
	}
	spec := slice.Spec{Model: e.j.model, Source: e.index, Hashes: e.hash, Layers: held(plan.Devices[idx].Windows)}
	start := time.Now()
	// Layers this device held in another slice (before a re-plan) come
	// from the cache; only the others travel.
	b := &slice.Builder{Dir: e.j.s.sp.CacheDir}
	local := slice.OpenLocal(b.Dir, e.j.model, e.src)
	res, err := b.Build(ctx, spec, local)
	fetched := local.RemoteBytes()
	local.Close()
	if errors.Is(err, slice.ErrHashMismatch) {
		e.j.log.Warn("a cached slice is damaged; fetching everything from the head", "err", err)
		res, err = b.Build(ctx, spec, e.src)
		fetched += res.Fetched
	}
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.fetched, e.sliceLen = fetched, res.Total
	e.mu.Unlock()
	e.j.log.Info("ring slice ready", "path", res.Path, "reused", res.Reused, "fetched", res.Fetched, "bytes", res.Total, "took", time.Since(start).Round(time.Millisecond))
	if res.Path != e.path {
		e.closeModel()
		m, err := ggml.Open(res.Path)
		if err != nil {
			return err
		}
		e.g.M, e.path = m, res.Path
	}
	if err := e.g.Prepare(plan, idx); err != nil {
		return err
	}
	return e.linkSuccessor(plan, idx)
}

// linkSuccessor dials the next worker of the ring, unless a link to it is
// open already or the next device is the head (whose link this is).
func (e *workerEngine) linkSuccessor(plan *wire.Plan, idx int) error {
	if idx+1 >= len(plan.Devices) {
		return nil
	}
	next := plan.Devices[idx+1].ID
	if e.j.drv.HasLink(next) {
		return nil
	}
	addr := e.j.addr(next)
	if addr == "" {
		return fmt.Errorf("runner: no address for the next device %s", next)
	}
	_, did, err := canonicalID(next)
	if err != nil {
		return err
	}
	c, err := e.j.s.ep.Dial(e.j.ctx, addr, did, transport.PurposeLink)
	if err != nil {
		return fmt.Errorf("runner: link to the next device %s: %w", next, err)
	}
	typ, p, _ := wire.Encode(&wire.JobLink{Job: e.j.id})
	if err := c.Send(transport.Frame{Type: transport.MsgType(typ), Payload: p}); err != nil {
		c.Close()
		return err
	}
	e.j.drv.AddConn(e.j.ctx, next, c)
	return nil
}

// held merges a device's windows into the sorted, disjoint layer ranges
// its slice holds.
func held(ws []wire.Range) []slice.Range {
	rs := make([]slice.Range, 0, len(ws))
	for _, w := range ws {
		rs = append(rs, slice.Range{Start: w.Start, End: w.End})
	}
	slices.SortFunc(rs, func(a, b slice.Range) int { return a.Start - b.Start })
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].End >= r.Start {
			out[n-1].End = max(out[n-1].End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}

func (e *workerEngine) Compute(c ring.Compute) (ring.ComputeDone, error) { return e.g.Compute(c) }
func (e *workerEngine) Prefetch(w wire.Range) {
	if e.g.M != nil {
		e.g.Prefetch(w)
	}
}
func (e *workerEngine) Release(w wire.Range) {
	if e.g.M != nil {
		e.g.Release(w)
	}
}

// Close frees the windows and unmaps the slice (the driver calls it on
// EndJob, the job once more when it ends).
func (e *workerEngine) Close() { e.closeModel() }

func (e *workerEngine) closeModel() {
	e.g.Close()
	if e.g.M != nil {
		e.g.M.Close()
		e.g.M, e.path = nil, ""
	}
}

func (e *workerEngine) closeSlices() {
	if e.src != nil {
		e.src.C.Close()
	}
	select {
	case c := <-e.j.sliceConns:
		c.Close()
	default:
	}
}
