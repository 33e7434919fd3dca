package job

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"homering/engine/ring"
	"homering/engine/ring/ggmlengine"
	"homering/engine/ring/wire"
)

// Several conversations on one job (issue 19 item 3; engine/ring's doc,
// "Streams"): the request that began or resumed the job has stream 0, and
// a request that comes while it runs joins it as another stream instead
// of waiting. Every device keeps one KV per stream and computes whatever
// input came first, so while one device computes stream A's token the
// previous one computes stream B's: up to as many streams as devices keep
// that many devices busy. A joining request starts at position 0 of its
// own stream (no cached prefix), and runs without a speculative draft
// (engine/runner). The plan admits a number of streams (Params.Streams,
// Halda's Plan.Streams: every device's memory holds that many KV caches);
// a request beyond them waits until one leaves, then joins, or begins or
// resumes a job when the last has left. When the last request leaves, the
// job ends or is kept as stream 0's request asked.

// streams is the job's conversations and the lead over the driver's
// actions.
type streams struct {
	mu     sync.Mutex
	convs  map[int]*conv        // the requests on the job now, by stream
	logits map[uint64][]float32 // the output head's logits by pass (seq), until their EmitToken
	// err is why the job failed (its plan, its driver): every request on
	// it ends with it; nil while it serves.
	err error
	// keep is what stream 0's request decided when it finished with
	// others still running (finish): keep the job after the last.
	keep, primaryDone bool
	// admit is how many streams the job's plan admits (Params.Streams,
	// lowered by a re-plan that admits fewer): join numbers streams below
	// it. Atomic: a re-plan sets it with or without mu.
	admit atomic.Int32
	// lead is held by the one goroutine that reads the driver's actions
	// (await).
	lead chan struct{}
	// last is the logits the output head just gave: written by Sample and
	// read by streamEngine.Compute, both on the driver's engine goroutine.
	last []float32
}

func (s *streams) init(c *conv, admit int) {
	s.convs = map[int]*conv{c.stream: c}
	s.admit.Store(int32(admit))
	s.logits = map[uint64][]float32{}
	s.lead = make(chan struct{}, 1)
}

// sorted returns the conversations by stream (mu held).
func (s *streams) sorted() []*conv {
	var out []*conv
	for _, k := range slices.Sorted(maps.Keys(s.convs)) {
		out = append(out, s.convs[k])
	}
	return out
}

// fail marks the job failed with err and wakes every waiting stream, so
// that each request ends with it instead of waiting for actions that will
// not come.
func (s *streams) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
	for _, c := range s.convs {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// streamEngine keeps each pass's logits by seq, for its stream's request:
// the output computes of several streams come back one after the other.
type streamEngine struct {
	*ggmlengine.GGML
	s *streams
}

func (e streamEngine) Compute(c ring.Compute) (ring.ComputeDone, error) {
	done, err := e.GGML.Compute(c)
	if c.Output && err == nil {
		e.s.mu.Lock()
		e.s.logits[c.Seq] = e.s.last
		e.s.mu.Unlock()
	}
	return done, err
}

// setActive makes h the job serving requests now: requests that come
// while it runs join it (join).
func (m *Head) setActive(h *headJob) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.active = h
}

// admitted is how many streams a job of rp runs at once: the plan's
// (Params.Streams), every stream the wire carries when it gives none.
func admitted(rp Params) int {
	if rp.Streams > 0 {
		return rp.Streams
	}
	return wire.MaxStreams
}

// freedC returns a channel closed when a stream of the job serving
// requests now leaves it, or the job ends or is kept (m.mu held).
func (m *Head) freedC() chan struct{} {
	if m.freed == nil {
		m.freed = make(chan struct{})
	}
	return m.freed
}

// wake tells the requests waiting for a stream (join) to look again.
func (m *Head) wake() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.freed != nil {
		close(m.freed)
		m.freed = nil
	}
}

// join returns the job serving requests now and a new stream on it for a
// request of prompt and maxTokens tokens, nil when no job serves one (the
// request begins or resumes one). A request the job cannot take now (its
// plan admits no more streams: every stream below the admitted count is
// in use) gets a channel that is closed when one leaves or the job ends,
// to call again then; one it cannot take at all (its caches are too
// short, other settings) gets an error.
//
// Streams are numbered below the admitted count, stream 0 the request
// that began the job (its KV is what a kept job keeps): every device
// keeps the windows of each stream number used until the plan ends, so
// the numbers bound the KV caches the plan's memory rows hold (halda,
// "Streams"), however many requests come and go.
func (m *Head) join(rp Params, nCtx, prompt, maxTokens int) (*headJob, *conv, <-chan struct{}, error) {
	m.mu.Lock()
	h := m.active
	freed := m.freedC() // taken before looking: a stream that leaves after closes it
	m.mu.Unlock()
	if h == nil {
		return nil, nil, nil, nil
	}
	<-h.started // begin has sized the caches (nCtx)
	if rp.Identity != h.identity || nCtx != h.loadNCtx {
		return nil, nil, nil, errors.New("job: another request runs on the ring with other settings; this one can start when it ends")
	}
	if need := ring.JobContext(nCtx, prompt, maxTokens); need > h.nCtx {
		return nil, nil, nil, fmt.Errorf("job: another request runs on the ring, whose caches hold %d positions; this one needs %d and can start when it ends", h.nCtx, need)
	}
	h.streams.mu.Lock()
	defer h.streams.mu.Unlock()
	if h.streams.err != nil {
		return nil, nil, nil, nil // the job failed: it ends with its requests
	}
	if h.streams.primaryDone && len(h.streams.convs) == 0 {
		return nil, nil, nil, nil // the job is being ended or kept
	}
	for s := 1; s < int(h.streams.admit.Load()); s++ {
		if h.streams.convs[s] == nil {
			c := newConv(s)
			c.nPrompt = prompt
			info := h.rm.model.Info()
			c.passRows = ring.PassRows(prefillChunk, ring.Shape{NEmbd: info.NEmbd, NFF: info.NFF, NHead: info.NHead}, ring.JobContext(nCtx, prompt, maxTokens), memLimit())
			if h.plan != nil {
				c.micro = h.microRows(c)
			}
			h.streams.convs[s] = c
			h.log.Info("request joins the ring job as another stream", "stream", s, "streams", len(h.streams.convs))
			return h, c, nil, nil
		}
	}
	return nil, nil, freed, nil
}

// beginStream waits until the plan is up for a request that joined as
// stream c (its prompt goes with its first Eval).
func (h *headJob) beginStream(ctx context.Context, c *conv) error {
	select {
	case <-h.started:
	case <-ctx.Done():
		return ctx.Err()
	}
	return h.await(ctx, c)
}

// finishStream ends the request of stream c (not 0): its stats, and the
// job's end or hold when it was the last.
func (h *headJob) finishStream(c *conv, err error) Result {
	h.streams.mu.Lock()
	delete(h.streams.convs, c.stream)
	last := len(h.streams.convs) == 0 && h.streams.primaryDone
	keep := h.streams.keep
	res := c.reqStats
	res.Devices = h.deviceStats(h.plan, h.mem)
	if h.plan != nil {
		res.PlanID = h.plan.ID
	}
	res.Trace = c.tr.result(c.micro)
	inflight := c.inflight > 0
	h.streams.mu.Unlock()
	if last {
		h.leaveLast(keep, inflight)
	}
	h.rm.wake() // its stream is free, or the job ended or is kept
	if err != nil {
		return Result{}
	}
	return res
}

// leaveLast ends the job or holds it idle once its last request left.
func (h *headJob) leaveLast(keep, inflight bool) {
	h.rm.mu.Lock()
	if h.rm.active == h {
		h.rm.active = nil
	}
	h.rm.mu.Unlock()
	h.streams.mu.Lock()
	failed := h.streams.err != nil
	h.streams.mu.Unlock()
	if keep && !failed {
		h.holdIdle(inflight)
	} else {
		h.end()
	}
	h.rm.wake() // requests waiting for a stream begin or resume a job
}
