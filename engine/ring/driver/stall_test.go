package driver

import (
	"context"
	"strings"
	"testing"
	"time"

	"homering/engine/ring"
	"homering/engine/ring/ggmlengine"
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
