package runner

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"time"

	"homering/engine/ring/job"
	"homering/engine/ring/wire"
	"homering/halda"
)

// The ring's types on the pipe are engine/ring/job's, which produces and
// consumes them; their JSON is this protocol's (doc.go).
type (
	// RingPeer is one worker of a ring job: its device ID and the address
	// its runner child listens on (ServeRing's answer on that device).
	RingPeer = job.Peer
	// DeviceStats is one device's part of a ring generation, as measured.
	DeviceStats = job.DeviceStats
	// ServeParams say how a worker's child serves ring jobs.
	ServeParams = job.ServeParams
	// Progress is how far the head has sent a worker the weights of its
	// windows.
	Progress = job.Progress
	// RingTrace is where a ring request's time went before and during its
	// prompt.
	RingTrace = job.Trace
	// Serving is what the child's worker does for a head (EvJob).
	Serving = job.Serving
)

// RingParams say how to run a ring job from the head.
type RingParams struct {
	Plan *wire.Plan `json:"plan"` // from ring.FromHalda; Devices[0] is the head
	// Problem is the calibrated Halda problem Plan was solved from: on a
	// loss the child re-plans from it (ring.PlanWithout) over the devices
	// of Peers that are left, and installs the new plan itself. nil: a
	// loss ends the generation.
	Problem    *halda.Problem `json:"problem,omitempty"`
	Peers      []RingPeer     `json:"peers"`                 // every worker of the plan
	Identity   string         `json:"identity"`              // config dir holding this device's certificate and key
	NoPrefetch bool           `json:"no_prefetch,omitempty"` // never prefetch the next window (bench/ring case e)
	TickMS     int            `json:"tick_ms,omitempty"`     // the ring's tick; 0: 500 ms (silence limits count ticks: engine/ring's doc)
	// KeepMS holds the job idle this long after the request (0: it ends
	// with the request; at most an hour): the next request with the same
	// plan, peers and settings reuses it: no new job, and the prefill
	// skips the full passes its KV caches hold of the new prompt (a fresh
	// job's passes, so the reply is a fresh job's).
	KeepMS int `json:"keep_ms,omitempty"`
	// Streams is how many generations the plan admits at once as streams
	// of one ring job (halda.Plan.Streams, whose memory rows hold that many
	// KV caches on every device): a call beyond them waits in the child
	// until one ends. 0: as many as the wire carries (wire.MaxStreams).
	Streams int `json:"streams,omitempty"`

	// OnProgress (parent side only) hears how far weight slices have been
	// sent to each worker, at most a few times a second per worker.
	OnProgress func(Progress) `json:"-"`
}

// RingGenerate runs g on the ring of rp with this device as the head: the
// child maps lp's model, dials every worker of rp.Peers (mutual TLS with the
// identity in rp.Identity), serves them the slices of their windows and
// streams tokens to onToken. When a worker is lost the child re-plans
// from rp.Problem without the lost devices (and without any the agent gave
// no address: it cannot ask a device to serve), re-prefills the
// conversation on the new plan and goes on; no plan ends the generation.
// Stats carry per-device entries and, after a loss, the lost devices, the
// plan that finished the reply and the time from the loss to the next
// token.
//
// Device IDs (plan entries, peers) are identity.DeviceID text in any form
// ParseDeviceID reads; the plan's first device must be this device's
// identity.
//
// Calls on the same model run at once (issue 19 item 3): a call that comes
// while ring generations of that model run joins them, and the child runs
// it as another stream of their ring job (ringgroup.go).
func (s *Supervisor) RingGenerate(ctx context.Context, lp LoadParams, rp RingParams, g GenerateParams,
	onToken func(Token) error) (Stats, error) {
	gr, id, sub, err := s.joinGroup(ctx, lp.Model)
	if err != nil {
		return Stats{}, err
	}
	defer s.leaveGroup(gr, id)
	if err := gr.p.send(Request{ID: id, Op: OpRingGenerate, Load: &lp, Ring: &rp, Generate: &g}); err != nil {
		gr.p.kill() // its stdin is broken: the dispatcher sees it die
		<-gr.diedC
		return Stats{}, gr.died
	}
	onProgress := rp.OnProgress
	st, err := s.follow(ctx, id, gr.p, sub, func(string) error { <-gr.diedC; return gr.died }, func() {
		gr.killed.Store(true)
		gr.p.kill()
	}, onToken, func(ev Event) error {
		if ev.Type == EvProgress && ev.Progress != nil && onProgress != nil {
			onProgress(*ev.Progress)
		}
		return nil
	})
	if err == nil {
		gr.ok.Store(true)
	}
	return st, err
}

// busyWait is how long ServeRing waits for a call of this agent's own to
// end before it answers from what the child serves, or refuses.
const busyWait = 250 * time.Millisecond

// ErrBusy is ServeRing's refusal while the child runs a request of this
// agent's own (a chat it is the head of) and does not serve already.
var ErrBusy = errors.New("runner: this device is answering a chat of its own")

// ServeRing makes the child a ring worker: it listens on sp.Listen with the
// device's identity, admits only sp.Allowed, and runs the jobs heads start
// (slices fetched into sp.CacheDir, windows opened, prefetched, released)
// until ctx ends or StopServing. It returns the address the child listens
// on. Called again with the same parameters while serving, it returns the
// same address; with others, it serves anew. A child that died while
// serving is restarted by the next call.
func (s *Supervisor) ServeRing(ctx context.Context, sp ServeParams) (addr string, err error) {
	// While a chat of this agent's own holds the child (a head generating),
	// another head asking for a job gets the address at once when the child
	// already serves it, else a refusal at once: never a wait that outlasts
	// the head's ask.
	wctx, cancel := context.WithTimeout(ctx, busyWait)
	err = s.lock(wctx)
	cancel()
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, ErrClosed) {
			return "", err
		}
		s.smu.Lock()
		params, addr := s.serving, s.serveAddr
		s.smu.Unlock()
		if params != nil && reflect.DeepEqual(*params, sp) {
			return addr, nil
		}
		return "", ErrBusy
	}
	defer s.unlock()
	if err := s.started(ctx); err != nil {
		return "", err
	}
	if s.serveID != 0 && s.serving != nil && reflect.DeepEqual(*s.serving, sp) {
		return s.serveAddr, nil
	}
	id := s.id()
	if err := s.p.send(Request{ID: id, Op: OpServeRing, Serve: &sp}); err != nil {
		return "", s.dead("starting to serve the ring")
	}
	for {
		ev, err := s.next(ctx, "starting to serve the ring")
		if err != nil {
			return "", err
		}
		if ev.ID != id {
			continue // a late event; the old serve's done among them
		}
		switch ev.Type {
		case EvServing:
			s.endServing()
			stop := make(chan struct{})
			s.smu.Lock()
			s.serveID, s.serving, s.serveAddr, s.serveStop = id, &sp, ev.Addr, stop
			s.smu.Unlock()
			context.AfterFunc(ctx, func() {
				select {
				case <-stop:
				default:
					_ = s.stopServing(context.Background(), stop)
				}
			})
			return ev.Addr, nil
		case EvError:
			return "", &RequestError{Code: ev.Code, Text: ev.Error}
		}
	}
}

// StopServing ends serving: a job in flight ends, its windows close, the
// listener closes. The child keeps running.
func (s *Supervisor) StopServing(ctx context.Context) error {
	return s.stopServing(ctx, nil)
}

// stopServing stops the serving that only (when non-nil) names.
func (s *Supervisor) stopServing(ctx context.Context, only chan struct{}) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	if s.p == nil || s.serveID == 0 || only != nil && s.serveStop != only {
		return nil
	}
	id := s.serveID
	s.endServing()
	if err := s.p.send(Request{ID: s.id(), Op: OpStop, Target: id}); err != nil {
		return s.dead("stopping the ring")
	}
	for {
		ev, err := s.next(ctx, "stopping the ring")
		if err != nil {
			return err
		}
		if ev.ID == id && (ev.Type == EvDone || ev.Type == EvError) {
			return nil
		}
	}
}

// endServing forgets the serving state; s locked.
func (s *Supervisor) endServing() {
	if s.serveStop != nil {
		close(s.serveStop)
	}
	s.smu.Lock()
	s.serveID, s.serving, s.serveAddr, s.serveStop, s.job = 0, nil, "", nil, nil
	s.smu.Unlock()
}

// Serving is the ring job the child's worker runs for another head now
// (its last EvJob), or nil: not serving, or between jobs. It answers at
// once, even while a call holds the child.
func (s *Supervisor) Serving() *Serving {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.job == nil || s.job.Ended {
		return nil
	}
	j := *s.job
	j.Windows = slices.Clone(j.Windows)
	return &j
}

// EndRingJob ends the ring job the child holds idle after a request with
// RingParams.KeepMS, if any (its workers free their windows now rather
// than when its time is up). No child, no kept job: nothing happens.
func (s *Supervisor) EndRingJob(ctx context.Context) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	if s.p == nil {
		return nil
	}
	select {
	case <-s.p.exited:
		return nil // no child, no job: the next call notices the death
	default:
	}
	_, err := s.request(ctx, OpRingEnd, "ending the kept ring job")
	return err
}
