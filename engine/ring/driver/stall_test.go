package driver

import (
	"bytes"
	"context"
	"encoding/binary"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"homering/engine/ring"
	"homering/engine/ring/ggmlengine"
	"homering/engine/ring/wire"
	"homering/internal/testwait"
)

// A worker whose engine hangs while its driver lives (its reader answers
// every ping) is never silent; the head loses it as stalled once it has
// held the token's activation for 4 × its expected window time + 16 ticks
// (doc.go of engine/ring, "Stalls"), and not before.
func TestFrozenEngineLostAsStalled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const tick = 20 * time.Millisecond
	ma, mb := openModel(t), openModel(t)
	ea := &ggmlengine.GGML{M: ma, NCtx: 64, Threads: 1}
	eb := &gated{Engine: &ggmlengine.GGML{M: mb, NCtx: 64, Threads: 1}, gate: make(chan struct{})}
	defer ea.Close()
	sa := ring.New(tid("a"), int(tick/time.Millisecond))
	// b's window is told to take 5 ms a row: for the prompt's rows the
	// bound is 4 × 5 ms × rows in ticks, + 16.
	sa.Expect(tid("b"), ring.Expectation{DecodeMs: 5})
	bound := time.Duration(ring.StallTicks(int(tick/time.Millisecond), 5*len(prompt), 0)) * tick
	a := New(sa, ea, tick, logger(t).With("device", "a"))
	b := New(ring.New(tid("b"), int(tick/time.Millisecond)), eb, tick, logger(t).With("device", "b"))
	pipe(t, ctx, a, "a", b, "b")
	go func() { _ = a.Run(ctx) }()
	go func() { _ = b.Run(ctx) }()
	go func() {
		for range b.Out() {
		}
	}()
	if err := a.Post(ctx, ring.PlanInstalled{Plan: twoDevicePlan(ma)}); err != nil {
		t.Fatal(err)
	}
	await[ring.Ready](t, a)
	start := time.Now()
	if err := a.Post(ctx, ring.StartToken{Tokens: prompt}); err != nil {
		t.Fatal(err)
	}
	r := await[ring.Replan](t, a)
	took := time.Since(start)
	close(eb.gate) // let b's engine go, so that the test ends
	if !strings.Contains(r.Reason, "stalled") || len(r.Without) != 1 || r.Without[0] != tid("b") {
		t.Fatalf("Replan = %+v, want b lost as stalled (not silent: its pinger answers)", r)
	}
	// Not before the bound (the ticks may come late on a loaded machine,
	// never early); the upper end is loose for the same reason.
	if took < bound-2*tick || took > 20*bound {
		t.Errorf("b lost as stalled %v after the token started, want about %v", took, bound)
	}
	t.Logf("frozen engine lost as stalled %v after the token started (bound %v)", took, bound)
}

// busy computes each window only after spinning its thread for spin: a
// worker starved far below its expected speed, whose engine still works.
type busy struct {
	Engine
	spin time.Duration
}

func (b *busy) Compute(c ring.Compute) (ring.ComputeDone, error) {
	for start := time.Now(); time.Since(start) < b.spin; {
	}
	return b.Engine.Compute(c)
}

// A worker whose window takes 3 × the stall bound but whose engine
// computes all along is not a stall: its pongs carry its engine thread's
// CPU time, which grows, and the head counts that as progress (doc.go of
// engine/ring, "Stalls"). The frozen engine above reports it too, and it
// does not grow.
func TestSlowEngineNotStalled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const tick = 20 * time.Millisecond
	ma, mb := openModel(t), openModel(t)
	ea := &ggmlengine.GGML{M: ma, NCtx: 64, Threads: 1}
	gb := &ggmlengine.GGML{M: mb, NCtx: 64, Threads: 1}
	defer ea.Close()
	defer gb.Close()
	sa := ring.New(tid("a"), int(tick/time.Millisecond))
	sa.Expect(tid("b"), ring.Expectation{DecodeMs: 5})
	bound := time.Duration(ring.StallTicks(int(tick/time.Millisecond), 5*len(prompt), 0)) * tick
	eb := &busy{Engine: gb, spin: 3 * bound}
	a := New(sa, ea, tick, logger(t).With("device", "a"))
	b := New(ring.New(tid("b"), int(tick/time.Millisecond)), eb, tick, logger(t).With("device", "b"))
	pipe(t, ctx, a, "a", b, "b")
	go func() { _ = a.Run(ctx) }()
	go func() { _ = b.Run(ctx) }()
	go func() {
		for range b.Out() {
		}
	}()
	if err := a.Post(ctx, ring.PlanInstalled{Plan: twoDevicePlan(ma)}); err != nil {
		t.Fatal(err)
	}
	await[ring.Ready](t, a)
	start := time.Now()
	if err := a.Post(ctx, ring.StartToken{Tokens: prompt}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case act := <-a.Out():
			switch act := act.(type) {
			case ring.Replan:
				t.Fatalf("b lost %v after the token started (stall bound %v, its window spins %v): %s", time.Since(start), bound, eb.spin, act.Reason)
			case ring.EmitToken:
				took := time.Since(start)
				if took < eb.spin {
					t.Fatalf("token after %v, before b's window could end (%v)", took, eb.spin)
				}
				t.Logf("slow engine's token came %v after it started, past its stall bound %v", took, bound)
				return
			}
		case <-deadline:
			t.Fatal("no token within 30 s")
		}
	}
}

// Pings ask for the answerer's sign of work without breaking older peers:
// an older head's 8-byte ping gets its echo, an older worker's echo of the
// 12-byte ping still gives the round trip (no work), and a newer worker's
// pong gives both.
func TestPongWorkCompatible(t *testing.T) {
	d := New(ring.New(tid("a"), 20), nil, 20*time.Millisecond, logger(t))
	d.engineTID.Store(int64(engineThread()))
	defer runtime.UnlockOSThread()
	for time.Since(d.start) < 2*time.Millisecond { // some CPU time on this thread
	}
	old := binary.BigEndian.AppendUint64(nil, uint64(time.Since(d.start)))
	if got := d.answerPing(old); !bytes.Equal(got, old) {
		t.Errorf("an 8-byte ping got %x, want its echo", got)
	}
	if pg, ok := d.readPong(old); !ok || pg.ms < 1 || pg.work != 0 {
		t.Errorf("an 8-byte pong read as %+v, %v; want a round trip, no work", pg, ok)
	}
	ping := append(slices.Clone(old), workAsk...)
	if pg, ok := d.readPong(ping); !ok || pg.work != 0 {
		t.Errorf("an older worker's echo read as %+v, %v; want a round trip, no work", pg, ok)
	}
	pg, ok := d.readPong(d.answerPing(ping))
	if !ok || pg.ms < 1 {
		t.Fatalf("a newer worker's pong read as %+v, %v", pg, ok)
	}
	if runtime.GOOS == "linux" && pg.work < uint64(time.Millisecond) {
		t.Errorf("the pong carries %d ns of engine work, want at least the 2 ms this thread spun", pg.work)
	}
	for _, bad := range [][]byte{old[:7], append(slices.Clone(ping), 1), append(slices.Clone(old), "wark"...)} {
		if pg, ok := d.readPong(bad); ok {
			t.Errorf("pong %x read as %+v, want refused", bad, pg)
		}
	}
}

// A worker's report that reaches the head after its successor's is no
// stall of the successor (issue 19 item 3). b's driver sends its
// activation on to c and then its report to a, and between the two it
// measures itself (Measure): here that takes until c's report is in, as a
// busy or starved b did on the rig. The head counted c's report only once
// b's was in, so c seemed to hold the activation it had passed, and with
// the ring idle the head lost c as stalled at its bound; it must not.
func TestLateReportNoStall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const tick = 100 * time.Millisecond
	mk := func(id string, e Engine) *Driver {
		return New(ring.New(tid(id), int(tick/time.Millisecond)), e, tick, logger(t).With("device", id))
	}
	ma, mb, mc := openModel(t), openModel(t), openModel(t)
	ea, eb, ec := &ggmlengine.GGML{M: ma, NCtx: 64, Threads: 1}, &ggmlengine.GGML{M: mb, NCtx: 64, Threads: 1}, &ggmlengine.GGML{M: mc, NCtx: 64, Threads: 1}
	defer ea.Close()
	defer eb.Close()
	defer ec.Close()
	a, b, c := mk("a", ea), mk("b", eb), mk("c", ec)
	// c's window is told to take 5 ms: its bound is 1 + 16 ticks.
	a.s.Expect(tid("c"), ring.Expectation{DecodeMs: 5})
	bound := time.Duration(ring.StallTicks(int(tick/time.Millisecond), 5, 0)) * tick
	var slow atomic.Bool
	gate := make(chan struct{})
	b.Measure = func() Measures {
		if slow.Load() {
			<-gate
		}
		return Measures{}
	}
	pipe(t, ctx, a, "a", b, "b")
	pipe(t, ctx, b, "b", c, "c")
	pipe(t, ctx, a, "a", c, "c")
	go func() { _ = a.Run(ctx) }()
	go func() { _ = b.Run(ctx) }()
	go func() { _ = c.Run(ctx) }()
	for _, w := range []*Driver{b, c} {
		go func() {
			for range w.Out() {
			}
		}()
	}
	n := ma.Info().NLayer
	plan := &wire.Plan{ID: 1, K: 1, Layers: n, NEmbd: ma.Info().NEmbd, DType: wire.F32, Devices: []wire.Device{
		{ID: tid("a"), Windows: []wire.Range{rg(0, 2)}}, {ID: tid("b"), Windows: []wire.Range{rg(2, 4)}}, {ID: tid("c"), Windows: []wire.Range{rg(4, n)}}}}
	if err := a.Post(ctx, ring.PlanInstalled{Plan: plan}); err != nil {
		t.Fatal(err)
	}
	await[ring.Ready](t, a)
	slow.Store(true)
	if err := a.Post(ctx, ring.StartToken{Tokens: prompt}); err != nil {
		t.Fatal(err)
	}
	tok := await[ring.EmitToken](t, a).Token
	testwait.True(t, 30*time.Second, "c's report of the prompt at the head", func() bool { return a.Stats()[tid("c")].Prompts == 1 })
	if got := a.Stats()[tid("b")].Prompts; got != 0 {
		t.Fatalf("b's report reached the head before c's (%d prompts), want after", got)
	}
	close(gate)
	testwait.True(t, 30*time.Second, "b's report of the prompt at the head", func() bool { return a.Stats()[tid("b")].Prompts == 1 })
	// The ring is idle: nothing is held, so no one is lost, well past c's
	// bound.
	idle := time.After(bound + 10*tick)
	for waiting := true; waiting; {
		select {
		case act := <-a.Out():
			if r, ok := act.(ring.Replan); ok {
				t.Fatalf("lost with the ring idle (c's bound %v): %s", bound, r.Reason)
			}
		case <-idle:
			waiting = false
		}
	}
	// And the ring goes on.
	if err := a.Post(ctx, ring.StartToken{Tokens: []int32{tok}, Pos: len(prompt)}); err != nil {
		t.Fatal(err)
	}
	await[ring.EmitToken](t, a)
}
