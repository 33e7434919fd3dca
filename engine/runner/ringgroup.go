package runner

import (
	"context"
	"sync/atomic"
)

// ringGroup is the ring generations running at once on the child, all on
// one model (issue 19 item 3): the first takes the supervisor's lock
// (sem) as any call does and holds it for the group until the last one
// ends; the calls that come meanwhile join without it, and one goroutine
// (dispatch) hands each its events. The child runs them as streams of one
// ring job (engine/ring/job).
type ringGroup struct {
	model string
	p     *proc
	// subs, n and ended are guarded by the supervisor's gmu.
	subs  map[uint64]chan Event // each generation's events
	n     int                   // generations in the group
	ended bool                  // none may join: the last one left, or the child died
	stop  chan struct{}         // closed when the last one leaves
	// died is the child's death (a *DiedError), set before diedC closes
	// and every sub with it.
	died   error
	diedC  chan struct{}
	killed atomic.Bool // a generation killed the child after a stop that did not end it
	ok     atomic.Bool // a generation ended well: no backoff
}

// groupEvents is how many events a generation of a group may lag behind
// the child before the others wait for it.
const groupEvents = 1024

// joinGroup returns the group a ring generation on model runs in and the
// generation's request ID and events: the group running on model, or a new
// one once this call holds the supervisor's lock (then the child is
// started).
func (s *Supervisor) joinGroup(ctx context.Context, model string) (*ringGroup, uint64, chan Event, error) {
	for {
		s.gmu.Lock()
		if gr := s.group; gr != nil && gr.model == model && !gr.ended {
			id, sub := s.id(), make(chan Event, groupEvents)
			gr.subs[id] = sub
			gr.n++
			s.gmu.Unlock()
			return gr, id, sub, nil
		}
		formed := s.formed
		s.gmu.Unlock()
		select {
		case s.sem <- struct{}{}:
		case <-formed:
			continue // a group formed: maybe on model
		case <-ctx.Done():
			return nil, 0, nil, ctx.Err()
		case <-s.closed:
			return nil, 0, nil, ErrClosed
		}
		select {
		case <-s.closed:
			s.unlock()
			return nil, 0, nil, ErrClosed
		default:
		}
		if err := s.started(ctx); err != nil {
			s.unlock()
			return nil, 0, nil, err
		}
		s.mapped, s.mappedFile = model, statModel(model) // the child maps it anew when it changed (child.ringGenerate)
		id, sub := s.id(), make(chan Event, groupEvents)
		gr := &ringGroup{model: model, p: s.p, subs: map[uint64]chan Event{id: sub}, n: 1, stop: make(chan struct{}), diedC: make(chan struct{})}
		s.gmu.Lock()
		s.group = gr
		close(s.formed)
		s.formed = make(chan struct{})
		s.gmu.Unlock()
		go s.dispatch(gr)
		return gr, id, sub, nil
	}
}

// leaveGroup ends generation id's part in gr; the last one ends the group.
func (s *Supervisor) leaveGroup(gr *ringGroup, id uint64) {
	s.gmu.Lock()
	defer s.gmu.Unlock()
	delete(gr.subs, id)
	gr.n--
	if gr.n == 0 && !gr.ended {
		gr.ended = true
		if s.group == gr {
			s.group = nil
		}
		close(gr.stop)
	}
}

// dispatch hands the child's events to the group's generations until the
// last leaves or the child dies, then gives back the supervisor's lock.
func (s *Supervisor) dispatch(gr *ringGroup) {
	defer s.unlock()
	for {
		select {
		case ev, ok := <-gr.p.events:
			if !ok {
				err := s.dead("generating on the ring")
				if gr.killed.Load() {
					s.deaths = 0 // we killed it: no backoff
				}
				s.gmu.Lock()
				gr.died, gr.ended = err, true
				if s.group == gr {
					s.group = nil
				}
				for _, c := range gr.subs {
					close(c)
				}
				gr.subs = map[uint64]chan Event{}
				s.gmu.Unlock()
				close(gr.diedC)
				return
			}
			s.gmu.Lock()
			c := gr.subs[ev.ID]
			s.gmu.Unlock()
			if c != nil {
				select {
				case c <- ev:
				case <-gr.stop:
				}
			}
		case <-gr.stop:
			if gr.ok.Load() {
				s.deaths = 0
			}
			return
		}
	}
}
