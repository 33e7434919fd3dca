package driver

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"homering/discovery/deviceid"
	"homering/engine/profile/sysinfo"
	"homering/engine/ring"
	"homering/engine/ring/transport"
	"homering/engine/ring/wire"
)

// Engine computes this device's windows.
type Engine interface {
	// Prepare opens the windows this device runs in plan (at index idx).
	Prepare(plan *wire.Plan, idx int) error
	// Compute runs one Compute action.
	Compute(c ring.Compute) (ring.ComputeDone, error)
	Prefetch(w wire.Range)
	Release(w wire.Range)
}

// Closer is an Engine that can free its windows; the driver closes it when
// the job ends on this device (EndJob), so a worker whose head is gone
// frees its memory.
type Closer interface{ Close() }

// Measures are what a device reports about itself besides compute time.
type Measures struct {
	Pressure   float64 // memory pressure, 0..1 (see wire.DeviceStats)
	Fetched    int64   // slice bytes fetched for the current plan
	SliceBytes int64   // tensor bytes of this device's slice
	VRAMUsed   int64   // what its windows hold on its GPU, as allocated
	VRAMFree   int64   // what its GPU reports free
}

// Link sends frames to one peer.
type Link interface {
	Send(transport.Frame) error
	Close() error
}

// Driver runs a session.
type Driver struct {
	s      *ring.Session
	engine Engine
	log    *slog.Logger
	tick   time.Duration
	start  time.Time // pings carry the time since start
	in     chan ring.Event
	out    chan ring.Action
	// lastTick is when the loop stepped the previous Tick; only the loop
	// touches it.
	lastTick time.Time

	// Measure, when set, is asked for this device's memory pressure and
	// slice transfer each time a worker reports its stats to the head.
	// Set before Run.
	Measure func() Measures
	// OnJobMsg, when set, receives the job messages (wire.JobStart,
	// JobAck, JobLink) that arrive on a link; they never reach the session.
	// It runs on the link's reader goroutine. Set before AddConn.
	OnJobMsg func(from deviceid.ID, m wire.Msg)
	// NoPrefetch drops the session's Prefetch hints (to measure what
	// prefetching gains). Set before Run.
	NoPrefetch bool
	// Refused, when set, counts the frames a peer sent of a plan this
	// device never installed (ring.Dropped.NoPlan, as
	// transport.RefusedNoPlan) and the frames over the size limit, for
	// `homering doctor`. Set before Run and AddConn.
	Refused *transport.Refusals
	// noPlanLog limits the log lines of such frames (one a second, with
	// the count since): a peer may send thousands. Guarded by mu.
	noPlanLog struct {
		at     time.Time
		silent int
	}

	mu    sync.Mutex
	links map[deviceid.ID]Link // guarded by mu

	statsMu sync.Mutex
	stats   map[deviceid.ID]wire.DeviceStats // per device of the current plan, self included; guarded by statsMu

	// pongs holds the round trips of the pongs read since the loop last
	// took them, per peer: a link's reader records a pong here and never
	// waits for the loop, so a busy loop cannot hold back the pings
	// behind it (doc.go, "Pings").
	pongMu sync.Mutex
	pongs  map[deviceid.ID][]pong // guarded by pongMu

	// engineTID is the OS thread of the engine goroutine (engineThread),
	// whose CPU time this device's pongs carry as its sign of work; 0
	// until Run starts it, or where it cannot be read.
	engineTID atomic.Int64
}

// pong is what a pong told: its round trip and the peer's sign of engine
// work (0: none).
type pong struct {
	ms   int
	work uint64
}

// workAsk ends a ping that asks for the answerer's sign of engine work: a
// pong to it carries the ping's payload and then 8 bytes of work
// (big-endian). A peer that does not know it echoes the payload as it is,
// and an 8-byte ping (an older head's) gets its plain echo, so either kind
// of peer works with the other.
var workAsk = []byte("work")

// pingLen is the length of a ping that asks for work: the stamp, workAsk.
const pingLen = 8 + 4

// answerPing returns the pong payload for ping payload p.
func (d *Driver) answerPing(p []byte) []byte {
	if len(p) != pingLen || !bytes.Equal(p[8:], workAsk) {
		return p
	}
	return binary.BigEndian.AppendUint64(slices.Clone(p), threadWork(int(d.engineTID.Load())))
}

// readPong returns what pong payload p tells: ok is false for a payload
// that is no answer to this driver's pings.
func (d *Driver) readPong(p []byte) (pg pong, ok bool) {
	switch {
	case len(p) == 8: // an older driver's ping, echoed
	case len(p) >= pingLen && bytes.Equal(p[8:pingLen], workAsk):
		if len(p) == pingLen+8 {
			pg.work = binary.BigEndian.Uint64(p[pingLen:])
		} else if len(p) != pingLen {
			return pg, false
		}
	default:
		return pg, false
	}
	rtt := time.Since(d.start) - time.Duration(binary.BigEndian.Uint64(p[:8]))
	pg.ms = max(1, int(rtt.Milliseconds()))
	return pg, true
}

// New returns a driver for session s; Out delivers the caller's actions.
func New(s *ring.Session, e Engine, tick time.Duration, log *slog.Logger) *Driver {
	return &Driver{s: s, engine: e, log: log, tick: tick, start: time.Now(), in: make(chan ring.Event, 64), out: make(chan ring.Action, 64),
		links: map[deviceid.ID]Link{}, stats: map[deviceid.ID]wire.DeviceStats{}, pongs: map[deviceid.ID][]pong{}}
}

// Stats returns what each device of the current plan measured: this
// device's own compute (and Measure's numbers), and the last DeviceStats
// each worker sent. Safe for concurrent use.
func (d *Driver) Stats() map[deviceid.ID]wire.DeviceStats {
	d.statsMu.Lock()
	defer d.statsMu.Unlock()
	out := make(map[deviceid.ID]wire.DeviceStats, len(d.stats))
	for id, st := range d.stats {
		out[id] = st
	}
	return out
}

// HasLink reports whether a link to peer id is open.
func (d *Driver) HasLink(id deviceid.ID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.links[id] != nil
}

// CloseLinks closes every link (the job is over).
func (d *Driver) CloseLinks() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, l := range d.links {
		_ = l.Close()
		delete(d.links, id)
	}
}

// SendTo sends m to peer id on its link.
func (d *Driver) SendTo(id deviceid.ID, m wire.Msg) error {
	typ, p, err := wire.Encode(m)
	if err != nil {
		return err
	}
	d.mu.Lock()
	l := d.links[id]
	d.mu.Unlock()
	if l == nil {
		return fmt.Errorf("driver: no link to %s", id)
	}
	return l.Send(transport.Frame{Type: transport.MsgType(typ), Payload: p})
}

// Out delivers EmitToken, Ready, Replan and EndJob actions.
func (d *Driver) Out() <-chan ring.Action { return d.out }

// Post hands the session an event from the caller.
func (d *Driver) Post(ctx context.Context, ev ring.Event) error {
	select {
	case d.in <- ev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// queued sends a link's frames from its own goroutine, so that neither the
// loop nor a reader ever blocks on a slow or synchronous peer (two readers
// answering each other's pings over net.Pipe would deadlock). Pings and
// pongs go ahead of the frames waiting (megabytes of activations or
// weights): a pong answered late reads as silence.
type queued struct {
	c      *transport.Conn
	q      chan transport.Frame // frames, in order
	ctl    chan transport.Frame // pings and pongs
	mu     sync.Mutex
	closed bool // guarded by mu; q and ctl are closed with it
}

func newQueued(c *transport.Conn) *queued {
	return &queued{c: c, q: make(chan transport.Frame, 256), ctl: make(chan transport.Frame, 16)}
}

// ErrBacklog means a peer stopped reading: its queue is full.
var ErrBacklog = errors.New("driver: peer is not reading its frames")

func (l *queued) Send(f transport.Frame) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return net.ErrClosed
	}
	q := l.q
	if f.Type == transport.MsgPing || f.Type == transport.MsgPong {
		q = l.ctl
	}
	select {
	case q <- f:
		return nil
	default:
		return ErrBacklog
	}
}

func (l *queued) Close() error {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.q)
		close(l.ctl)
	}
	l.mu.Unlock()
	return l.c.Close()
}

func (l *queued) run() {
	q, ctl := l.q, l.ctl
	for q != nil || ctl != nil {
		var f transport.Frame
		var ok bool
		select {
		case f, ok = <-ctl: // first, when one waits
			if !ok {
				ctl = nil
				continue
			}
		default:
			select {
			case f, ok = <-ctl:
				if !ok {
					ctl = nil
					continue
				}
			case f, ok = <-q:
				if !ok {
					q = nil
					continue
				}
			}
		}
		if err := l.c.Send(f); err != nil {
			_ = l.c.Close()
			for q != nil || ctl != nil { // drain until Close
				select {
				case _, ok := <-q:
					if !ok {
						q = nil
					}
				case _, ok := <-ctl:
					if !ok {
						ctl = nil
					}
				}
			}
			return
		}
	}
}

// AddConn makes c the link to peer id and reads its frames until it fails
// or ctx ends.
func (d *Driver) AddConn(ctx context.Context, id deviceid.ID, c *transport.Conn) {
	l := newQueued(c)
	go func() {
		// The writer sends the reader's pongs: it needs a thread as
		// little held back as the reader's (pingThread).
		pingThread(d.log)
		l.run()
	}()
	d.mu.Lock()
	d.links[id] = l
	d.mu.Unlock()
	go func() {
		pingThread(d.log)
		defer func() {
			_ = l.Close()
			d.mu.Lock()
			if d.links[id] == l {
				delete(d.links, id)
			}
			d.mu.Unlock()
		}()
		for {
			f, err := c.Recv()
			if err != nil {
				if errors.Is(err, transport.ErrFrameTooBig) && d.Refused != nil {
					d.Refused.Add(transport.RefusedFrameSize)
				}
				d.log.Debug("ring link closed", "peer", id, "err", err)
				_ = d.Post(ctx, ring.PeerLost{ID: id, Reason: err.Error()})
				return
			}
			switch f.Type {
			case transport.MsgPing:
				err := l.Send(transport.Frame{Type: transport.MsgPong, Payload: d.answerPing(f.Payload)})
				if errors.Is(err, ErrBacklog) {
					// The pings read in one burst (doc.go, "Pings"): the
					// pongs past the queue are dropped, not the link.
					continue
				}
				if err != nil {
					_ = d.Post(ctx, ring.PeerLost{ID: id, Reason: err.Error()})
					return
				}
				continue
			case transport.MsgPong:
				if pg, ok := d.readPong(f.Payload); ok {
					d.pongMu.Lock()
					if len(d.pongs[id]) < 64 {
						d.pongs[id] = append(d.pongs[id], pg)
					}
					d.pongMu.Unlock()
				}
				continue
			}
			m, err := wire.Decode(wire.Type(f.Type), f.Payload)
			if err != nil {
				// A peer that sends what does not decode is cut off and lost.
				_ = d.Post(ctx, ring.PeerLost{ID: id, Reason: err.Error()})
				return
			}
			var ev ring.Event = ring.FrameIn{From: id, Msg: m}
			switch m := m.(type) {
			case *wire.DeviceStats:
				// A worker reports after each activation it sends on: the
				// head's progress signal (ring.Passed), with the compute
				// time since its previous report.
				d.statsMu.Lock()
				prev, had := d.stats[id]
				d.stats[id] = *m
				d.statsMu.Unlock()
				ev = ring.Heard{From: id}
				if had && prev.Plan == m.Plan { // the first of a plan comes before its ack
					p := ring.Passed{From: id}
					if now, was := m.ComputeUS+m.PromptUS, prev.ComputeUS+prev.PromptUS; now > was {
						p.ComputeMs = int((now - was + 999) / 1000)
					}
					ev = p
				}
			case *wire.JobStart, *wire.JobAck, *wire.JobLink:
				if d.OnJobMsg != nil {
					d.OnJobMsg(id, m)
				}
				ev = ring.Heard{From: id}
			}
			if d.Post(ctx, ev) != nil {
				return
			}
		}
	}()
}

// engineOp is one thing the engine goroutine does; exactly one field is set.
type engineOp struct {
	compute  *ring.Compute
	prepare  *wire.Plan
	prefetch *wire.Range
	release  *wire.Range
	close    bool
}

// Run steps the session until ctx ends. Everything that touches the Engine
// (Prepare, Compute, Prefetch, Release, closing it) runs in order on one
// goroutine of its own, so a slow Prepare (a slice download) or Compute
// never stalls ticks, pings and frames, and engine calls never overlap.
func (d *Driver) Run(ctx context.Context) error {
	t := time.NewTicker(d.tick)
	defer t.Stop()
	d.lastTick = time.Now()
	ops := make(chan engineOp)
	results := make(chan ring.Event, 1)
	var failed error // a compute error ends Run
	fail := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tid := engineThread()
		d.engineTID.Store(int64(tid))
		// Which thread's work this device's pongs report (bench/ring.sh's
		// loaded row samples its state by it).
		d.log.Debug("ring engine thread", "tid", tid)
		for op := range ops {
			if ev := d.runOp(op, fail); ev != nil {
				results <- ev
			}
		}
	}()
	var pending []engineOp
	defer func() {
		close(ops)
		go func() { // let a last result go so the engine goroutine can end
			for range results {
			}
		}()
		wg.Wait()
		close(results)
	}()
	for {
		var ev ring.Event
		var send chan engineOp
		var first engineOp
		if len(pending) > 0 {
			send, first = ops, pending[0]
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case failed = <-fail:
			d.log.Error("ring compute failed", "err", failed)
			return fmt.Errorf("driver: compute: %w", failed)
		case send <- first:
			pending = pending[1:]
			continue
		case <-t.C:
			pending = d.onTick(ctx, time.Now(), results, pending)
			continue
		case ev = <-d.in:
		case ev = <-results:
		}
		d.mu.Lock()
		pending = d.step(ctx, ev, pending)
		d.mu.Unlock()
	}
}

// onTick pings every link and steps a Tick that says how long it has been
// since the previous one (now − lastTick: a late tick means this process
// was starved). The events already queued go first: a pong or frame read
// before the tick is a sign of life before it, not silence.
func (d *Driver) onTick(ctx context.Context, now time.Time, results <-chan ring.Event, pending []engineOp) []engineOp {
	d.mu.Lock()
	defer d.mu.Unlock()
	for n := len(d.in); n > 0; n-- { // only this loop takes from d.in
		pending = d.step(ctx, <-d.in, pending)
	}
	pending = d.stepPongs(ctx, pending)
	select {
	case ev := <-results:
		pending = d.step(ctx, ev, pending)
	default:
	}
	gap := 0
	if !d.lastTick.IsZero() {
		gap = int(now.Sub(d.lastTick).Milliseconds())
	}
	d.lastTick = now
	// The pong is the sign of life (Heard) and the RTT.
	stamp := append(binary.BigEndian.AppendUint64(nil, uint64(time.Since(d.start))), workAsk...)
	for _, l := range d.links {
		_ = l.Send(transport.Frame{Type: transport.MsgPing, Payload: stamp})
	}
	return d.step(ctx, ring.Tick{GapMs: gap}, pending)
}

// stepPongs steps a Heard for every pong read since the last tick, in the
// order each link read them; d.mu held.
func (d *Driver) stepPongs(ctx context.Context, pending []engineOp) []engineOp {
	d.pongMu.Lock()
	pongs := d.pongs
	d.pongs = map[deviceid.ID][]pong{}
	d.pongMu.Unlock()
	for _, id := range slices.SortedFunc(maps.Keys(pongs), deviceid.ID.Compare) {
		for _, pg := range pongs[id] {
			pending = d.step(ctx, ring.Heard{From: id, RTTMs: pg.ms, Work: pg.work}, pending)
		}
	}
	return pending
}

// runOp does one engine operation on the engine goroutine and returns the
// event to feed back to the session, if any.
func (d *Driver) runOp(op engineOp, fail chan<- error) ring.Event {
	switch {
	case op.compute != nil:
		c := *op.compute
		// A window's compute takes well under Go's clock step on Windows
		// (a measured 0 would calibrate a device as infinitely fast):
		// sysinfo's clock is QueryPerformanceCounter there.
		start := sysinfo.Now()
		done, err := d.engine.Compute(c)
		if err != nil {
			select {
			case fail <- err:
			default:
			}
			return nil
		}
		d.measure(c, sysinfo.Since(start))
		return done
	case op.prepare != nil:
		code, text := wire.CodeOK, ""
		if err := d.engine.Prepare(op.prepare, op.prepare.Index(d.selfID())); err != nil {
			code, text = wire.CodeLoadFailed, err.Error()
		}
		// A worker's Prepare may have fetched its slice: give the heap the
		// transfer grew back to the OS now, not over minutes (memory
		// pressure counts it, and nothing else runs here before the plan
		// is up).
		debug.FreeOSMemory()
		return ring.Prepared{Plan: op.prepare.ID, Code: code, Text: text}
	case op.prefetch != nil:
		d.engine.Prefetch(*op.prefetch)
	case op.release != nil:
		d.engine.Release(*op.release)
	case op.close:
		if c, ok := d.engine.(Closer); ok {
			c.Close()
		}
		debug.FreeOSMemory() // the job is over here: nothing of it should stay
		TrimMalloc()
	}
	return nil
}

// measure adds a compute's time to this device's stats: a decode pass's to
// the token's cost, a prefill batch's (more rows) to the prompt's. A
// speculative verification's is neither: it would make a prompt look
// slower and, per token, the device faster than a calibration may believe.
func (d *Driver) measure(c ring.Compute, took time.Duration) {
	if c.Verify {
		return
	}
	rows := len(c.Tokens)
	if c.Hidden != nil {
		rows = c.Hidden.Rows
	}
	d.statsMu.Lock()
	defer d.statsMu.Unlock()
	st := d.stats[d.selfID()]
	if rows != 1 {
		st.PromptUS += uint64(took.Microseconds())
		st.Prompts++
		if c.Round == 0 && !c.Output {
			st.PromptRows += uint32(rows)
		}
		d.stats[d.selfID()] = st
		return
	}
	if c.Round == 0 && !c.Output {
		st.Tokens++
	}
	st.ComputeUS += uint64(took.Microseconds())
	d.stats[d.selfID()] = st
}

// report sends this worker's stats to the head; d.mu held.
func (d *Driver) report(plan *wire.Plan) {
	if plan == nil || plan.Index(d.selfID()) <= 0 {
		return
	}
	d.statsMu.Lock()
	st := d.stats[d.selfID()]
	st.Plan = plan.ID
	if d.Measure != nil {
		m := d.Measure()
		st.Pressure = uint16(min(max(m.Pressure, 0), 1) * 10000)
		st.Fetched, st.SliceBytes = uint64(max(m.Fetched, 0)), uint64(max(m.SliceBytes, 0))
		st.VRAMUsed, st.VRAMFree = uint64(max(m.VRAMUsed, 0)), uint64(max(m.VRAMFree, 0))
	}
	d.stats[d.selfID()] = st
	d.statsMu.Unlock()
	typ, p, err := wire.Encode(&st)
	if err != nil {
		return
	}
	if l := d.links[plan.Devices[0].ID]; l != nil {
		_ = l.Send(transport.Frame{Type: transport.MsgType(typ), Payload: p})
	}
}

// step runs one event through the session and does its actions, queueing
// engine work on pending; d.mu held.
func (d *Driver) step(ctx context.Context, ev ring.Event, pending []engineOp) []engineOp {
	// A new plan starts new measurements (the head's when it installs it,
	// a worker's when the plan arrives), before any report of it.
	_, install := ev.(ring.PlanInstalled)
	if f, ok := ev.(ring.FrameIn); ok {
		_, install = f.Msg.(*wire.Plan)
	}
	if install {
		d.statsMu.Lock()
		clear(d.stats)
		d.statsMu.Unlock()
	}
	plan := d.s.Plan()
	if p, ok := ev.(ring.Prepared); ok && p.Code == wire.CodeOK {
		d.report(plan) // before the ack, on the same link: the head has the slice numbers when the plan is up
	}
	for _, a := range d.s.Step(ev) {
		switch a := a.(type) {
		case ring.Send:
			typ, p, err := wire.Encode(a.Msg)
			if err == nil {
				if l := d.links[a.To]; l != nil {
					err = l.Send(transport.Frame{Type: transport.MsgType(typ), Payload: p})
				} else {
					err = errors.New("no link")
				}
			}
			if err != nil {
				d.log.Warn("ring send failed", "to", a.To, "err", err)
				go func() { _ = d.Post(ctx, ring.PeerLost{ID: a.To, Reason: err.Error()}) }()
			}
			// A worker reports after each activation it sent on, never in
			// front of its data: the head counts the reports as the ring's
			// progress, per round (ring.Passed).
			if _, ok := a.Msg.(*wire.Activation); ok && plan != nil {
				d.report(plan)
			}
		case ring.Compute:
			pending = append(pending, engineOp{compute: &a}) // the session has at most one Compute out
		case ring.Prepare:
			pending = append(pending, engineOp{prepare: a.Plan})
		case ring.Prefetch:
			if !d.NoPrefetch {
				pending = append(pending, engineOp{prefetch: &a.Window})
			}
		case ring.Release:
			pending = append(pending, engineOp{release: &a.Window})
		case ring.Disconnect:
			if l := d.links[a.ID]; l != nil {
				_ = l.Close()
				delete(d.links, a.ID)
			}
		case ring.Dropped:
			if a.NoPlan {
				d.refuseNoPlan(a)
				continue
			}
			d.log.Debug("ring dropped a frame", "from", a.From, "reason", a.Reason)
		case ring.EndJob:
			pending = append(pending, engineOp{close: true}) // free the windows: the job is over here
			d.forward(ctx, a)
		default:
			d.forward(ctx, a)
		}
	}
	return pending
}

// refuseNoPlan counts and logs a frame of a plan this device never
// installed (the link stays: the silence and stall rules find a peer that
// also breaks the ring); d.mu held.
func (d *Driver) refuseNoPlan(a ring.Dropped) {
	if d.Refused != nil {
		d.Refused.Add(transport.RefusedNoPlan)
	}
	if now := time.Now(); now.Sub(d.noPlanLog.at) >= time.Second {
		d.log.Warn("dropped a ring frame of a plan this device never installed", "from", a.From, "reason", a.Reason, "more_since_last_line", d.noPlanLog.silent)
		d.noPlanLog.at, d.noPlanLog.silent = now, 0
		return
	}
	d.noPlanLog.silent++
}

func (d *Driver) forward(ctx context.Context, a ring.Action) {
	select {
	case d.out <- a:
	case <-ctx.Done():
	}
}

func (d *Driver) selfID() deviceid.ID { return d.s.Self() }
