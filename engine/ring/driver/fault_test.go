package driver

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/engine/ring"
	"homering/engine/ring/ggmlengine"
	"homering/engine/ring/wire"
	"homering/internal/testwait"
)

// gated holds Compute until the test lets it go: a device frozen mid-token.
type gated struct {
	Engine
	gate chan struct{}
}

func (g *gated) Compute(c ring.Compute) (ring.ComputeDone, error) {
	<-g.gate
	return g.Engine.Compute(c)
}

// A worker dies while it holds the token: the head re-plans without it,
// re-prefills the conversation on the new plan and finishes the reply, which
// equals the unfaulted single-device one (issue 8 point 5).
func TestWorkerLostMidTokenReplyKept(t *testing.T) {
	want := reference(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cctx, killC := context.WithCancel(ctx)

	mk := func(id string, e Engine) *Driver {
		return New(ring.New(tid(id), 250), e, 250*time.Millisecond, logger(t).With("device", id))
	}
	ma, mb, mc := openModel(t), openModel(t), openModel(t)
	ea, eb := &ggmlengine.GGML{M: ma, NCtx: 64, Threads: 1}, &ggmlengine.GGML{M: mb, NCtx: 64, Threads: 1}
	ec := &gated{Engine: &ggmlengine.GGML{M: mc, NCtx: 64, Threads: 1}, gate: make(chan struct{})}
	close(ec.gate) // open until the fault
	defer ea.Close()
	defer eb.Close()
	a, b, c := mk("a", ea), mk("b", eb), mk("c", ec)
	pipe(t, ctx, a, "a", b, "b")
	pipe(t, ctx, b, "b", c, "c")
	pipe(t, cctx, a, "a", c, "c")
	cDone := make(chan error, 1)
	go func() { _ = a.Run(ctx) }()
	go func() { _ = b.Run(ctx) }()
	go func() { cDone <- c.Run(cctx) }()
	for _, w := range []*Driver{b, c} {
		go func() {
			for range w.Out() {
			}
		}()
	}

	n := ma.Info().NLayer
	plan1 := &wire.Plan{ID: 1, K: 1, Layers: n, NEmbd: ma.Info().NEmbd, DType: wire.F32, Devices: []wire.Device{
		{ID: tid("a"), Windows: []wire.Range{rg(0, 2)}}, {ID: tid("b"), Windows: []wire.Range{rg(2, 4)}}, {ID: tid("c"), Windows: []wire.Range{rg(4, 5)}}}}
	if err := a.Post(ctx, ring.PlanInstalled{Plan: plan1}); err != nil {
		t.Fatal(err)
	}
	await[ring.Ready](t, a)
	var got []int32
	gen := func(in []int32, pos int) int32 {
		t.Helper()
		if err := a.Post(ctx, ring.StartToken{Tokens: in, Pos: pos}); err != nil {
			t.Fatal(err)
		}
		return await[ring.EmitToken](t, a).Token
	}
	in, pos := prompt, 0
	for range 4 {
		tok := gen(in, pos)
		pos += len(in)
		got = append(got, tok)
		in = []int32{tok}
	}

	// Freeze c, start the next token, and kill c while it holds it.
	ec.gate = make(chan struct{})
	if err := a.Post(ctx, ring.StartToken{Tokens: in, Pos: pos}); err != nil {
		t.Fatal(err)
	}
	testwait.True(t, 30*time.Second, "the ring's state", func() bool { return len(c.in) == 0 && c.s.State() == ring.Up && busyOn(c) })
	killed := time.Now()
	killC()
	closeLinks(c)
	r := await[ring.Replan](t, a)
	close(ec.gate)
	if err := <-cDone; err != nil {
		t.Logf("c's driver ended: %v", err)
	}
	if diff := cmp.Diff([]string{"c"}, names(r.Without)); diff != "" {
		t.Errorf("Replan.Without (-want +got)\n%s", diff)
	}

	// The node's part: Halda's new plan without c.
	plan2 := &wire.Plan{ID: 2, K: 1, Layers: n, NEmbd: ma.Info().NEmbd, DType: wire.F32, Devices: []wire.Device{
		{ID: tid("a"), Windows: []wire.Range{rg(0, 3)}}, {ID: tid("b"), Windows: []wire.Range{rg(3, 5)}}}}
	if err := a.Post(ctx, ring.PlanInstalled{Plan: plan2}); err != nil {
		t.Fatal(err)
	}
	if ready := await[ring.Ready](t, a); ready.Plan != 2 {
		t.Errorf("Ready after the re-plan: %+v, want plan 2", ready)
	}
	// Re-prefill the conversation so far, then go on.
	conv := append(append([]int32{}, prompt...), got...)
	tok := gen(conv, 0)
	t.Logf("kill to next token: %v", time.Since(killed))
	pos = len(conv)
	got = append(got, tok)
	in = []int32{tok}
	for len(got) < nGen {
		tok := gen(in, pos)
		pos++
		got = append(got, tok)
		in = []int32{tok}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reply (-unfaulted +faulted)\n%s", diff)
	}
}

// busyOn reports whether d has a compute out (its loop gave it a job).
func busyOn(d *Driver) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.s.Busy()
}

func closeLinks(d *Driver) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range d.links {
		_ = l.Close()
	}
}
