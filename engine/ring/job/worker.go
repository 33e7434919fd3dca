package job

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"homering/discovery/deviceid"
	"homering/discovery/identity"
	"homering/engine/ggml"
	"homering/engine/gguf"
	"homering/engine/profile/sysinfo"
	"homering/engine/ring"
	"homering/engine/ring/driver"
	"homering/engine/ring/ggmlengine"
	"homering/engine/ring/transport"
	"homering/engine/ring/wire"
	"homering/engine/slice"
)

// Worker is the worker side of the ring in a runner process: a listener
// with the device's identity that runs the jobs heads start, one at a time.
type Worker struct {
	sp    ServeParams
	self  deviceid.ID
	ep    *transport.Endpoint
	ln    net.Listener
	log   *slog.Logger
	allow map[identity.DeviceID]bool
	cache *slice.Cache // the slice cache, shared by the jobs (one at a time)
	gaps  *Gaps        // the process's silence history, seeding each job's session

	cancel context.CancelFunc
	done   chan struct{} // closed when Serve and every job have ended

	mu  sync.Mutex
	job *workerJob // guarded by mu; nil between jobs
	wg  sync.WaitGroup

	// index is the last model index fetched from a head (its GGUF header
	// and tensor hashes), by the model's identity: a later job on the same
	// model skips the fetch (a few round trips and the header's bytes,
	// ~170 ms on the rig's links). Cached slices are reused by the same
	// identity; the hashes still check every fetched byte. Guarded by mu.
	index modelIndex
}

// modelIndex is a head's model index as a worker fetched it.
type modelIndex struct {
	model [32]byte
	g     *gguf.File
	hash  map[string][32]byte
}

// StartWorker listens with the identity in sp and serves heads' jobs in
// the background until ctx ends or Stop. gaps is the process's silence
// history, shared with its head side; nice, when not nil, lowers the
// process's CPU priority once it listens.
func StartWorker(ctx context.Context, sp ServeParams, gaps *Gaps, nice func() error, log *slog.Logger) (*Worker, error) {
	if sp.CacheDir == "" || sp.Identity == "" {
		return nil, errors.New("job: serve_ring needs an identity directory and a cache directory")
	}
	ident, err := identity.LoadOrCreate(sp.Identity, time.Now(), crand.Reader)
	if err != nil {
		return nil, err
	}
	s := &Worker{sp: sp, self: ident.ID, log: log.With("ring", "worker"), allow: map[identity.DeviceID]bool{}, done: make(chan struct{}),
		cache: &slice.Cache{Dir: sp.CacheDir}, gaps: gaps}
	for _, a := range sp.Allowed {
		if a.IsZero() {
			return nil, errors.New("job: an allowed device without a device ID")
		}
		s.allow[a] = true
	}
	s.ep = transport.New(transport.Config{
		Identity: ident,
		Hello: func() transport.Hello {
			return transport.Hello{ProtoMin: transport.ProtoMin, ProtoMax: transport.ProtoMax, Purpose: transport.PurposeLink, App: AppName}
		},
		Authorize: func(id identity.DeviceID) transport.Decision {
			if s.allow[id] || s.inJob(id) {
				return transport.AllowLink
			}
			return transport.Refuse
		},
		Log:      s.log,
		Refusals: sp.Refusals,
	})
	listen := sp.Listen
	if listen == "" {
		listen = "[::]:0"
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("job: listen for the ring on %s: %w", listen, err)
	}
	s.ln = ln
	// A contributing device must not slow its owner down: lower the CPU
	// priority of every thread (ggml's thread pool, made later by the
	// first job, inherits it).
	if nice != nil {
		if err := nice(); err != nil {
			s.log.Warn("cannot lower the CPU priority", "err", err)
		}
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

// Addr is the address the worker listens on.
func (s *Worker) Addr() string { return s.ln.Addr().String() }

// Stop ends serving: the job in flight ends (its windows close) and the
// listener closes.
func (s *Worker) Stop() {
	s.cancel()
	<-s.done
}

// inJob reports whether id is a device of the job in flight. A person pairs
// each worker with the head, not the workers with each other; the head
// (paired, so trusted) names the job's devices by certificate hash, which
// is enough to admit the predecessor's activation link for this job only.
func (s *Worker) inJob(id deviceid.ID) bool {
	s.mu.Lock()
	j := s.job
	s.mu.Unlock()
	return j != nil && j.knows(id)
}

func (s *Worker) endJob() {
	s.mu.Lock()
	j := s.job
	s.mu.Unlock()
	if j != nil {
		j.cancel()
		<-j.done
	}
}

func (s *Worker) handle(ctx context.Context, c *transport.Conn) {
	peer := c.Peer
	if c.Hello.Purpose == transport.PurposeSlice {
		s.mu.Lock()
		j := s.job
		s.mu.Unlock()
		if j == nil || j.head != peer {
			_ = c.Close()
			return
		}
		select {
		case j.sliceConns <- c:
		default:
			_ = c.Close() // one slice connection per job
		}
		return
	}
	m, err := recvOne(ctx, c, 10*time.Second)
	if err != nil {
		s.log.Info("ring link without a job message", "peer", peer, "err", err)
		_ = c.Close()
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
			// Not counted: a successor's link for a job that ended here
			// a moment ago is a working ring's race, not a lie.
			s.log.Info("ring link for no job of this device", "peer", peer, "job", m.Job)
			_ = c.Close()
			return
		}
		s.log.Debug("ring link from the predecessor", "peer", peer, "job", m.Job)
		j.drv.AddConn(j.ctx, peer, c)
	default:
		// A ring frame (an activation, a plan's ack) before any job: no
		// head or worker sends one first.
		s.refuse("ring frame before a job on its link", peer, ring.MsgString(m))
		_ = c.Close()
	}
}

// refuse logs and counts a link's first frame that is a ring frame before
// any job (transport.RefusedNoPlan); the caller closes the link.
func (s *Worker) refuse(what string, peer deviceid.ID, msg string) {
	if s.sp.Refusals != nil {
		s.sp.Refusals.Add(transport.RefusedNoPlan)
	}
	s.log.Warn("refused a "+what, "peer", peer, "msg", msg)
}

func (s *Worker) startJob(ctx context.Context, head deviceid.ID, c *transport.Conn, js *wire.JobStart) {
	refuse := func(text string) {
		if typ, p, err := wire.Encode(&wire.JobAck{Job: js.Job, Code: wire.CodeBadPlan, Text: text}); err == nil {
			_ = c.Send(transport.Frame{Type: transport.MsgType(typ), Payload: p})
		}
		_ = c.Close()
	}
	s.mu.Lock()
	old := s.job
	s.mu.Unlock()
	if old != nil {
		switch {
		case old.head == head:
			// The same head starts over (it lost its previous job, or
			// starts afresh instead of its kept one): end that one.
		case old.isIdle():
			// A job its head holds between requests never keeps another
			// head out: it ends, and its head starts afresh next time.
			s.log.Info("ending an idle ring job for another head's", "idle_head", old.head, "head", head)
		case old.ctx.Err() != nil:
			// Ending already (its head said goodbye): wait for its
			// windows to close rather than refuse.
		default:
			// Its head's goodbye may be on its way (its links are not
			// this one): wait a moment before refusing.
			select {
			case <-old.done:
			case <-time.After(endingWait):
				refuse("this device is serving another head's job")
				return
			}
		}
		old.cancel()
		<-old.done
	}
	jctx, cancel := context.WithCancel(ctx)
	j := &workerJob{s: s, id: js.Job, head: head, model: js.Model, nCtx: js.NCtx, ctx: jctx, cancel: cancel, since: time.Now(),
		done: make(chan struct{}), sliceConns: make(chan *transport.Conn, 1), peers: map[deviceid.ID]string{}, log: s.log.With("job", js.Job)}
	j.setPeers(js.Peers)
	j.eng = &workerEngine{j: j, g: &ggmlengine.GGML{NCtx: js.NCtx, Threads: s.sp.Threads}}
	// Tick as the head does, so both sides call the other lost after the
	// same silence.
	tick := time.Duration(js.TickMS) * time.Millisecond
	j.tick = tick
	j.sess = s.gaps.session(s.self, tick, j.log)
	j.drv = driver.New(j.sess, j.eng, tick, j.log)
	j.drv.NoPrefetch = js.NoPrefetch
	j.drv.Refused = s.sp.Refusals
	j.drv.Measure = j.eng.measures
	j.drv.OnJobMsg = func(from deviceid.ID, m wire.Msg) {
		if u, ok := m.(*wire.JobStart); ok && from == head && u.Job == j.id {
			j.setPeers(u.Peers)
			j.setIdle(u.Idle)
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

// endingWait is how long a worker asked for a job while it serves another
// head's waits for that job to end before refusing: a head that has just
// finished says goodbye on its own link, which may be read after the next
// head's job start.
const endingWait = time.Second

// workerJob is one ring job on a worker.
type workerJob struct {
	s      *Worker
	id     uint64
	head   deviceid.ID
	model  [32]byte
	nCtx   int
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	log    *slog.Logger
	drv    *driver.Driver
	sess   *ring.Session // the driver's; read once the driver has stopped
	tick   time.Duration // the session's tick
	eng    *workerEngine
	since  time.Time // when the job started
	told   Serving   // what report last told the parent; run's goroutine only

	sliceConns chan *transport.Conn

	mu        sync.Mutex
	peers     map[deviceid.ID]string // device → ring address; guarded by mu
	idleSince time.Time              // when the head said the job is idle; zero while it works; guarded by mu
}

// setIdle records whether the head holds the job idle (wire.JobStart.Idle).
func (j *workerJob) setIdle(idle bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case !idle:
		j.idleSince = time.Time{}
	case j.idleSince.IsZero():
		j.idleSince = time.Now()
	}
}

// isIdle reports whether the head holds the job idle.
func (j *workerJob) isIdle() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return !j.idleSince.IsZero()
}

// idleEnd says why this worker ends the job its head holds idle, or "":
// held too long, or too much memory held for it (idleMemory).
func (j *workerJob) idleEnd() string {
	j.mu.Lock()
	since := j.idleSince
	j.mu.Unlock()
	switch {
	case since.IsZero():
		return ""
	case time.Since(since) > workerIdleMax:
		return fmt.Sprintf("idle for more than %v", workerIdleMax)
	}
	kv, compute := j.eng.g.Memory()
	return idleMemory(kv + compute)
}

func (j *workerJob) setPeers(ps []wire.Peer) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, p := range ps {
		j.peers[p.ID] = p.Addr
	}
}

func (j *workerJob) knows(id deviceid.ID) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, ok := j.peers[id]
	return ok
}

func (j *workerJob) addr(id deviceid.ID) string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.peers[id]
}

// run drives the job until the head ends it or goes away, then frees
// everything it held: links, windows, the mapped slice.
func (j *workerJob) run() {
	defer close(j.done)
	j.log.Info("ring job started", "head", j.head)
	j.report(false)
	runDone := make(chan error, 1)
	go func() { runDone <- j.drv.Run(j.ctx) }()
	reason := "stopped serving"
	// The session notices a lost head once a plan is installed; before
	// that, a closed head link alone ends the job.
	check := time.NewTicker(idleCheck)
	defer check.Stop()
loop:
	for {
		select {
		case <-j.ctx.Done():
			break loop
		case <-check.C:
			j.report(false)
			if !j.drv.HasLink(j.head) {
				reason = "the head's link closed"
				break loop
			}
			if why := j.idleEnd(); why != "" {
				reason = "ended while idle: " + why
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
				j.report(false)
			}
		}
	}
	j.cancel()
	if err := <-runDone; err != nil && !errors.Is(err, context.Canceled) {
		j.log.Info("the job's driver ended", "err", err)
	}
	// The driver has stopped: what the session learned of the head's
	// silences goes to the next job (gaps.go).
	j.s.gaps.record(time.Now(), j.tick, j.sess.Gaps())
	j.drv.CloseLinks()
	j.eng.Close()
	j.eng.closeSlices()
	j.log.Info("ring job ended; windows closed", "reason", reason)
	j.report(true)
}

// report tells the parent (ServeParams.OnServing) what the job is doing
// now, when that differs from what it last told: another plan, idleness,
// memory by a MiB or pressure by 0.1%, or the job's end.
func (j *workerJob) report(ended bool) {
	on := j.s.sp.OnServing
	if on == nil {
		return
	}
	e := j.eng
	e.mu.Lock()
	st := Serving{Job: j.id, Head: j.head, Windows: slices.Clone(e.windows), GPULayers: e.gpuLayers,
		Idle: j.isIdle(), Ended: ended, Since: j.since}
	if e.mem != nil {
		st.Pressure = e.mem.sample()
	}
	e.mu.Unlock()
	if !ended {
		st.AnonBytes = sysinfo.ProcessAnon()
	}
	t := j.told
	if !ended && slices.Equal(st.Windows, t.Windows) && st.GPULayers == t.GPULayers && st.Idle == t.Idle &&
		st.AnonBytes>>20 == t.AnonBytes>>20 && math.Round(st.Pressure*1000) == math.Round(t.Pressure*1000) && t.Job == j.id {
		return
	}
	j.told = st
	on(st)
}

// workerEngine is a worker's driver.Engine: Prepare finds the layers of the
// plan's windows in the slice cache, fetches from the head into a new slice
// only those no cached slice holds, maps every slice it uses and opens the
// windows over them, and links this device to its successor.
type workerEngine struct {
	j *workerJob
	g *ggmlengine.GGML // g.Parts: the mapped slices and their layers

	models map[string]*ggml.Model // mapped slices by path
	src    *slice.ConnSource
	index  *gguf.File
	hash   map[string][32]byte
	mem    *pressure

	mu                sync.Mutex // guards fetched, sliceLen, vram, windows, mem (read by the driver's loop)
	fetched, sliceLen int64
	// windows and gpuLayers are this device's part of the plan whose
	// windows are open (for the parent: report).
	windows   []wire.Range
	gpuLayers int
	// vramUsed, vramFree: the GPU memory of the plan's windows, read once
	// they are open (a GPU window reserves its largest evaluation then), so
	// the driver's reports never wait on a compute for it.
	vramUsed, vramFree int64
}

func (e *workerEngine) measures() driver.Measures {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := driver.Measures{Fetched: e.fetched, SliceBytes: e.sliceLen, VRAMUsed: e.vramUsed, VRAMFree: e.vramFree}
	if e.mem != nil {
		m.Pressure = e.mem.sample()
	}
	return m
}

// Prepare runs on the driver's engine goroutine.
func (e *workerEngine) Prepare(plan *wire.Plan, idx int) error {
	if idx <= 0 {
		return fmt.Errorf("job: this device is not a worker of plan %d", plan.ID)
	}
	if e.mem == nil {
		p := newPressure()
		e.mu.Lock()
		e.mem = p
		e.mu.Unlock()
	}
	// The link to the next device is dialled while the windows are made
	// ready (a few round trips: ~40-110 ms on the rig's links).
	next := e.dialSuccessor(plan, idx)
	defer next.abandon()
	ctx := e.j.ctx
	if e.src == nil {
		var c *transport.Conn
		select {
		case c = <-e.j.sliceConns:
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(30 * time.Second):
			return errors.New("job: the head opened no slice connection")
		}
		e.src = &slice.ConnSource{C: c, Model: e.j.model}
		s := e.j.s
		s.mu.Lock()
		idx := s.index
		s.mu.Unlock()
		if idx.g == nil || idx.model != e.j.model {
			g, h, err := e.src.FetchIndex(ctx)
			if err != nil {
				return fmt.Errorf("job: fetch the model index from the head: %w", err)
			}
			idx = modelIndex{model: e.j.model, g: g, hash: h}
			s.mu.Lock()
			s.index = idx
			s.mu.Unlock()
		}
		e.index, e.hash = idx.g, idx.hash
	}
	spec := slice.Spec{Model: e.j.model, Source: e.index, Hashes: e.hash, Layers: held(plan.Devices[idx].Windows)}
	var sliceLen int64
	for _, t := range slice.Tensors(spec) {
		sliceLen += t.Size
	}
	cache := e.j.s.cache
	start := time.Now()
	pieces, fetched, err := e.fetchMissing(ctx, cache, spec)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.fetched, e.sliceLen = fetched, sliceLen
	e.mu.Unlock()
	fetchedAt := time.Now()
	// The old plan's windows go first: the slices only they used are
	// unmapped, those still used stay mapped.
	e.g.Close()
	parts, err := e.mapPieces(pieces)
	if err != nil {
		// A cached slice that does not open: drop it and fetch its layers.
		var bad *openError
		if !errors.As(err, &bad) {
			return err
		}
		e.j.log.Warn("a cached slice does not open; fetching its layers again", "err", err)
		_ = os.Remove(bad.path)
		if pieces, fetched, err = e.fetchMissing(ctx, cache, spec); err != nil {
			return err
		}
		e.mu.Lock()
		e.fetched += fetched
		e.mu.Unlock()
		if parts, err = e.mapPieces(pieces); err != nil {
			return err
		}
	}
	e.g.Parts = parts
	if e.g.Routing == nil {
		e.g.Routing = newRoutingStore(e.j.s.sp.Identity, e.j.model, plan.Layers, e.j.log)
	}
	if err := e.g.Prepare(plan, idx); err != nil {
		return err
	}
	used, free := e.g.GPUMemory()
	e.mu.Lock()
	e.vramUsed, e.vramFree = used, free
	e.windows, e.gpuLayers = slices.Clone(plan.Devices[idx].Windows), plan.Devices[idx].GPULayers
	e.mu.Unlock()
	inUse := e.paths()
	cache.Touch(inUse...)
	e.j.log.Info("ring windows open", "layers", spec.Layers, "files", len(inUse), "sub_windows", len(parts),
		"fetched", fetched, "bytes", sliceLen, "fetch_took", fetchedAt.Sub(start).Round(time.Millisecond),
		"open_took", time.Since(fetchedAt).Round(time.Millisecond))
	if p, err := cache.Prune(inUse, slice.Budget(sliceLen, e.j.s.sp.CacheMax), slice.MinFree); err != nil {
		e.j.log.Warn("cannot prune the slice cache", "err", err)
	} else if len(p.Removed) > 0 {
		e.j.log.Info("slice cache pruned", "removed", len(p.Removed), "freed", p.Freed, "left", p.Left)
	}
	return next.finish()
}

// fetchMissing covers spec's layers with the cached slices and fetches the
// layers none holds into one new slice; it returns the pieces, each with
// its file, and the bytes fetched.
func (e *workerEngine) fetchMissing(ctx context.Context, cache *slice.Cache, spec slice.Spec) ([]slice.Piece, int64, error) {
	pieces, missing := slice.Cover(spec.Layers, cache.Slices(spec.Model))
	if len(missing) == 0 {
		return pieces, 0, nil
	}
	miss := spec
	miss.Layers = missing
	b := &slice.Builder{Dir: cache.Dir}
	res, err := b.Build(ctx, miss, e.src)
	if errors.Is(err, slice.ErrNoSpace) {
		// Make room: every slice this job does not map goes, then try once more.
		keep := e.paths()
		for _, p := range pieces {
			if p.Path != "" {
				keep = append(keep, p.Path)
			}
		}
		if p, perr := cache.Prune(keep, 0, 0); perr == nil && len(p.Removed) > 0 {
			e.j.log.Warn("disk full: removed unused slices", "removed", len(p.Removed), "freed", p.Freed)
			res, err = b.Build(ctx, miss, e.src)
		}
	}
	if err != nil {
		return nil, 0, err
	}
	for i := range pieces {
		if pieces[i].Path == "" {
			pieces[i].Path = res.Path
		}
	}
	return pieces, res.Fetched, nil
}

// openError names a slice that ggml could not open.
type openError struct {
	path string
	err  error
}

func (e *openError) Error() string { return e.err.Error() }
func (e *openError) Unwrap() error { return e.err }

// mapPieces maps the slices pieces name (keeping those mapped already,
// unmapping the others) and returns the parts the windows run on. The
// windows must be closed.
func (e *workerEngine) mapPieces(pieces []slice.Piece) ([]ggmlengine.Part, error) {
	used := map[string]bool{}
	for _, p := range pieces {
		used[p.Path] = true
	}
	for path, m := range e.models {
		if !used[path] {
			_ = m.Close()
			delete(e.models, path)
		}
	}
	if e.models == nil {
		e.models = map[string]*ggml.Model{}
	}
	parts := make([]ggmlengine.Part, 0, len(pieces))
	for _, p := range pieces {
		m := e.models[p.Path]
		if m == nil {
			var err error
			if m, err = ggml.Open(p.Path); err != nil {
				return nil, &openError{path: p.Path, err: err}
			}
			e.models[p.Path] = m
		}
		parts = append(parts, ggmlengine.Part{First: p.Start, Last: p.End, M: m})
	}
	return parts, nil
}

// paths lists the mapped slices.
func (e *workerEngine) paths() []string {
	out := make([]string, 0, len(e.models))
	for p := range e.models {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// successorDial is the link to the next worker of the ring being dialled
// (dialSuccessor); the zero value, and nil, need none.
type successorDial struct {
	e    *workerEngine
	next deviceid.ID
	done chan struct{} // closed when c, err are set
	c    *transport.Conn
	err  error
	used bool
}

// dialSuccessor starts dialling the next worker of the ring, unless a link
// to it is open already or the next device is the head (whose link this
// is). The link joins the driver as soon as it is up, so that it is read
// (pings answered) while the windows are made ready: a Prepare that
// fetches a slice can take minutes, and a link nobody reads for that long
// does not survive it (on the rig at full size the successor's link was
// gone when the first activation went out: "no link", and the head lost the
// successor as stalled a minute later). finish checks it is still there.
func (e *workerEngine) dialSuccessor(plan *wire.Plan, idx int) *successorDial {
	if idx+1 >= len(plan.Devices) {
		return nil
	}
	next := plan.Devices[idx+1].ID
	if e.j.drv.HasLink(next) {
		e.j.log.Debug("ring successor link open already", "next", next)
		return nil
	}
	d := &successorDial{e: e, next: next, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		d.c, d.err = e.dialLink(next)
		if d.err == nil {
			e.j.drv.AddConn(e.j.ctx, next, d.c)
		}
	}()
	return d
}

// dialLink opens a ring link to worker next of this job (wire.JobLink first).
func (e *workerEngine) dialLink(next deviceid.ID) (*transport.Conn, error) {
	addr := e.j.addr(next)
	if addr == "" {
		return nil, fmt.Errorf("job: no address for the next device %s", next)
	}
	c, err := e.j.s.ep.Dial(e.j.ctx, addr, next, transport.PurposeLink)
	if err != nil {
		return nil, fmt.Errorf("job: link to the next device %s: %w", next, err)
	}
	typ, p, _ := wire.Encode(&wire.JobLink{Job: e.j.id})
	if err := c.Send(transport.Frame{Type: transport.MsgType(typ), Payload: p}); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("job: link to the next device %s: %w", next, err)
	}
	return c, nil
}

// finish waits for the dial and makes sure the link is still up when the
// windows are: one that closed meanwhile is dialled again.
func (d *successorDial) finish() error {
	if d == nil {
		return nil
	}
	<-d.done
	if d.err != nil {
		return d.err
	}
	d.used = true
	if !d.e.j.drv.HasLink(d.next) {
		d.e.j.log.Info("ring successor link closed while preparing; dialling it again", "next", d.next)
		c, err := d.e.dialLink(d.next)
		if err != nil {
			return err
		}
		d.e.j.drv.AddConn(d.e.j.ctx, d.next, c)
	}
	d.e.j.log.Debug("ring successor link up", "next", d.next)
	return nil
}

// abandon closes a link dialled for a Prepare that failed before using it.
func (d *successorDial) abandon() {
	if d == nil || d.used {
		return
	}
	go func() {
		<-d.done
		if d.c != nil {
			_ = d.c.Close() // its reader takes it out of the driver
		}
	}()
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

func (e *workerEngine) Compute(c ring.Compute) (ring.ComputeDone, error) {
	// An activation means the head is working: the job is no longer idle,
	// even if its JobStart saying so (on another link) comes later.
	e.j.setIdle(false)
	return e.g.Compute(c)
}
func (e *workerEngine) Prefetch(w wire.Range) { e.g.Prefetch(w) }
func (e *workerEngine) Release(w wire.Range)  { e.g.Release(w) }

// Close frees the windows and unmaps the slices (the driver calls it on
// EndJob, the job once more when it ends).
func (e *workerEngine) Close() {
	e.g.Close()
	e.g.Parts = nil
	for path, m := range e.models {
		_ = m.Close()
		delete(e.models, path)
	}
}

func (e *workerEngine) closeSlices() {
	if e.src != nil {
		_ = e.src.C.Close()
	}
	select {
	case c := <-e.j.sliceConns:
		_ = c.Close()
	default:
	}
}
