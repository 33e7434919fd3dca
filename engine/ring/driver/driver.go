package driver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

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

	mu    sync.Mutex
	links map[string]Link // guarded by mu
}

// New returns a driver for session s; Out delivers the caller's actions.
func New(s *ring.Session, e Engine, tick time.Duration, log *slog.Logger) *Driver {
	return &Driver{s: s, engine: e, log: log, tick: tick, start: time.Now(), in: make(chan ring.Event, 64), out: make(chan ring.Action, 64), links: map[string]Link{}}
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
// answering each other's pings over net.Pipe would deadlock).
type queued struct {
	c      *transport.Conn
	q      chan transport.Frame
	mu     sync.Mutex
	closed bool // guarded by mu; q is closed with it
}

// ErrBacklog means a peer stopped reading: its queue is full.
var ErrBacklog = errors.New("driver: peer is not reading its frames")

func (l *queued) Send(f transport.Frame) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return net.ErrClosed
	}
	select {
	case l.q <- f:
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
	}
	l.mu.Unlock()
	return l.c.Close()
}

func (l *queued) run() {
	for f := range l.q {
		if err := l.c.Send(f); err != nil {
			l.c.Close()
			for range l.q { // drain until Close
			}
			return
		}
	}
}

// AddConn makes c the link to peer id and reads its frames until it fails
// or ctx ends.
func (d *Driver) AddConn(ctx context.Context, id string, c *transport.Conn) {
	l := &queued{c: c, q: make(chan transport.Frame, 256)}
	go l.run()
	d.mu.Lock()
	d.links[id] = l
	d.mu.Unlock()
	go func() {
		defer l.Close()
		for {
			f, err := c.Recv()
			if err != nil {
				_ = d.Post(ctx, ring.PeerLost{ID: id, Reason: err.Error()})
				return
			}
			switch f.Type {
			case transport.MsgPing:
				if err := l.Send(transport.Frame{Type: transport.MsgPong, Payload: f.Payload}); err != nil {
					_ = d.Post(ctx, ring.PeerLost{ID: id, Reason: err.Error()})
					return
				}
				continue
			case transport.MsgPong:
				if len(f.Payload) == 8 {
					rtt := time.Since(d.start) - time.Duration(binary.BigEndian.Uint64(f.Payload))
					_ = d.Post(ctx, ring.Heard{From: id, RTTMs: max(1, int(rtt.Milliseconds()))})
				}
				continue
			}
			m, err := wire.Decode(wire.Type(f.Type), f.Payload)
			if err != nil {
				// A peer that sends what does not decode is cut off and lost.
				_ = d.Post(ctx, ring.PeerLost{ID: id, Reason: err.Error()})
				return
			}
			if d.Post(ctx, ring.FrameIn{From: id, Msg: m}) != nil {
				return
			}
		}
	}()
}

type computeResult struct {
	done ring.ComputeDone
	err  error
}

// Run steps the session until ctx ends.
func (d *Driver) Run(ctx context.Context) error {
	t := time.NewTicker(d.tick)
	defer t.Stop()
	jobs := make(chan ring.Compute, 1)
	results := make(chan computeResult, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for c := range jobs {
			done, err := d.engine.Compute(c)
			results <- computeResult{done, err}
		}
	}()
	defer func() {
		close(jobs)
		wg.Wait()
	}()
	for {
		var ev ring.Event
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			ev = ring.Tick{}
			// Ping every link; the pong is the sign of life (Heard) and the RTT.
			stamp := binary.BigEndian.AppendUint64(nil, uint64(time.Since(d.start)))
			d.mu.Lock()
			for _, l := range d.links {
				_ = l.Send(transport.Frame{Type: transport.MsgPing, Payload: stamp})
			}
			d.mu.Unlock()
		case ev = <-d.in:
		case r := <-results:
			if r.err != nil {
				d.log.Error("ring compute failed", "err", r.err)
				return fmt.Errorf("driver: compute: %w", r.err)
			}
			ev = r.done
		}
		d.mu.Lock()
		d.step(ctx, ev, jobs)
		d.mu.Unlock()
	}
}

// step runs one event through the session and does its actions; d.mu held.
func (d *Driver) step(ctx context.Context, ev ring.Event, jobs chan<- ring.Compute) {
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
		case ring.Compute:
			jobs <- a // the session has at most one Compute out
		case ring.Prepare:
			code, text := wire.CodeOK, ""
			if err := d.engine.Prepare(a.Plan, a.Plan.Index(d.selfID())); err != nil {
				code, text = wire.CodeLoadFailed, err.Error()
			}
			go func() { _ = d.Post(ctx, ring.Prepared{Plan: a.Plan.ID, Code: code, Text: text}) }()
		case ring.Prefetch:
			d.engine.Prefetch(a.Window)
		case ring.Release:
			d.engine.Release(a.Window)
		case ring.Disconnect:
			if l := d.links[a.ID]; l != nil {
				l.Close()
				delete(d.links, a.ID)
			}
		case ring.Dropped:
			d.log.Debug("ring dropped a frame", "from", a.From, "reason", a.Reason)
		default:
			select {
			case d.out <- a:
			case <-ctx.Done():
			}
		}
	}
}

func (d *Driver) selfID() string { return d.s.Self() }
