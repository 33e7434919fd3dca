package driver

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/engine/ring"
	"homering/engine/ring/transport"
	"homering/engine/ring/wire"
)

// recordLink is a Link that keeps what the driver sends.
type recordLink struct {
	mu   sync.Mutex
	sent []transport.Frame
}

func (l *recordLink) Send(f transport.Frame) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent = append(l.sent, f)
	return nil
}

func (l *recordLink) Close() error { return nil }

func (l *recordLink) pings() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, f := range l.sent {
		if f.Type == transport.MsgPing {
			n++
		}
	}
	return n
}

// idleEngine is never asked to run: these tests step the driver by hand,
// without Run's engine goroutine.
type idleEngine struct{}

func (idleEngine) Prepare(*wire.Plan, int) error                  { return nil }
func (idleEngine) Compute(ring.Compute) (ring.ComputeDone, error) { return ring.ComputeDone{}, nil }
func (idleEngine) Prefetch(wire.Range)                            {}
func (idleEngine) Release(wire.Range)                             {}

const handTick = 100 * time.Millisecond

// upHead returns the driver of head a serving a plan with worker b (a
// recorded link), stepped by hand: no Run, no ticker, no goroutines.
func upHead(t *testing.T, ctx context.Context) (*Driver, *recordLink) {
	t.Helper()
	d := New(ring.New(tid("a"), int(handTick/time.Millisecond)), idleEngine{}, handTick, logger(t))
	b := &recordLink{}
	d.links[tid("b")] = b
	plan := &wire.Plan{ID: 1, K: 1, Layers: 2, NEmbd: 2, DType: wire.F32, Devices: []wire.Device{
		{ID: tid("a"), Windows: []wire.Range{rg(0, 1)}}, {ID: tid("b"), Windows: []wire.Range{rg(1, 2)}}}}
	d.mu.Lock()
	for _, ev := range []ring.Event{ring.PlanInstalled{Plan: plan}, ring.Prepared{Plan: 1}, ring.FrameIn{From: tid("b"), Msg: &wire.PlanAck{Plan: 1}}} {
		d.step(ctx, ev, nil)
	}
	d.mu.Unlock()
	if a := <-d.out; a.String() != (ring.Ready{Plan: 1}).String() {
		t.Fatalf("after the plan: %s, want Ready", a)
	}
	return d, b
}

// lost returns the Replan the driver gave out, if any.
func lost(d *Driver) (ring.Replan, bool) {
	for {
		select {
		case a := <-d.out:
			if r, ok := a.(ring.Replan); ok {
				return r, true
			}
		default:
			return ring.Replan{}, false
		}
	}
}

// A pong read just before a tick is a sign of life before it: the tick
// steps the queued events first, whatever order Run's select picks.
func TestTickStepsQueuedEventsFirst(t *testing.T) {
	ctx := context.Background()
	d, b := upHead(t, ctx)
	t0 := time.Now()
	at := func(n int) time.Time { return t0.Add(time.Duration(n) * handTick) }
	var pending []engineOp
	for n := 1; n <= 10; n++ {
		d.in <- ring.Heard{From: tid("b"), RTTMs: 1} // b's pong, read as the tick fires
		pending = d.onTick(ctx, at(n), nil, pending)
	}
	if r, ok := lost(d); ok {
		t.Fatalf("b answered before every tick, yet %s", r)
	}
	if n := b.pings(); n != 10 {
		t.Errorf("%d pings sent in 10 ticks, want 10", n)
	}
	// Silence still counts: 3 ticks without an answer lose b.
	for n := 11; n <= 13; n++ {
		pending = d.onTick(ctx, at(n), nil, pending)
	}
	if r, ok := lost(d); !ok || !strings.Contains(r.Reason, "silent for 3 ticks") {
		t.Errorf("3 silent ticks: %+v (lost %v), want b lost by silence", r, ok)
	}
}

// A tick that comes more than 2 periods after the previous one means this
// process was starved: it does not count b's silence; on-time ticks do.
func TestLateTickDoesNotCount(t *testing.T) {
	ctx := context.Background()
	d, _ := upHead(t, ctx)
	t0 := time.Now()
	var pending []engineOp
	for i, tc := range []struct {
		at       time.Duration
		wantLost bool
	}{
		{0, false}, // the first tick: no previous one, on time
		{handTick, false},
		{handTick + 3*handTick, false}, // late: 3 periods since the previous
		{5 * handTick, true},           // the third counted silent tick
	} {
		pending = d.onTick(ctx, t0.Add(tc.at), nil, pending)
		if _, got := lost(d); got != tc.wantLost {
			t.Fatalf("tick %d at %v: lost %v, want %v", i+1, tc.at, got, tc.wantLost)
		}
	}
}

// Pings and pongs go out before the frames waiting on a link, so a peer's
// silence is not a queue of activations in front of its pong.
func TestPongsGoFirst(t *testing.T) {
	near, far := link(t, "a", "b")
	l := newQueued(near)
	defer l.Close()
	data := transport.Frame{Type: transport.MsgRingFirst, Payload: make([]byte, 64<<10)}
	for range 5 {
		if err := l.Send(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Send(transport.Frame{Type: transport.MsgPong, Payload: []byte{1, 2, 3, 4, 5, 6, 7, 8}}); err != nil {
		t.Fatal(err)
	}
	go l.run()
	var got []transport.MsgType
	for range 6 {
		f, err := far.Recv()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, f.Type)
	}
	want := []transport.MsgType{transport.MsgPong, transport.MsgRingFirst, transport.MsgRingFirst, transport.MsgRingFirst, transport.MsgRingFirst, transport.MsgRingFirst}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("frame types in the order sent: the pong first (-want +got)\n%s", diff)
	}
}
