package driver

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/engine/ggml"
	"homering/engine/ring"
	"homering/engine/ring/ggmlengine"
	"homering/engine/ring/wire"
	"homering/internal/testwait"
)

// closing records that the driver closed it.
type closing struct {
	*ggmlengine.GGML
	closed atomic.Bool
}

func (c *closing) Close() { c.closed.Store(true); c.GGML.Close() }

// startPair runs head a and worker b over a pipe with plan and waits until
// the plan is up.
func startPair(t *testing.T, ctx context.Context, ea, eb Engine, plan *wire.Plan, setup func(a, b *Driver)) (a, b *Driver) {
	t.Helper()
	a = New(ring.New(tid("a"), 250), ea, 250*time.Millisecond, logger(t).With("device", "a"))
	b = New(ring.New(tid("b"), 250), eb, 250*time.Millisecond, logger(t).With("device", "b"))
	if setup != nil {
		setup(a, b)
	}
	pipe(t, ctx, a, "a", b, "b")
	go func() { _ = a.Run(ctx) }() // ends with ctx; the test reads what it did from Out
	go func() { _ = b.Run(ctx) }()
	if err := a.Post(ctx, ring.PlanInstalled{Plan: plan}); err != nil {
		t.Fatal(err)
	}
	await[ring.Ready](t, a)
	return a, b
}

func twoDevicePlan(m *ggml.Model) *wire.Plan {
	return &wire.Plan{ID: 1, K: 1, Layers: m.Info().NLayer, NEmbd: m.Info().NEmbd, DType: wire.F32, Devices: []wire.Device{
		{ID: tid("a"), Windows: []wire.Range{rg(0, 2)}}, {ID: tid("b"), Windows: []wire.Range{rg(2, 5)}}}}
}

// A worker whose head goes away ends the job and the driver closes its
// engine's windows itself.
func TestEndJobClosesWindows(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ma, mb := openModel(t), openModel(t)
	ea := &ggmlengine.GGML{M: ma, NCtx: 64, Threads: 1}
	eb := &closing{GGML: &ggmlengine.GGML{M: mb, NCtx: 64, Threads: 1}}
	defer ea.Close()
	a, b := startPair(t, ctx, ea, eb, twoDevicePlan(ma), nil)
	if eb.closed.Load() {
		t.Fatal("windows closed while the job runs")
	}
	closeLinks(a) // the head is gone
	if e := await[ring.EndJob](t, b); e.Reason == "" {
		t.Errorf("EndJob without a reason")
	}
	testwait.True(t, 30*time.Second, "the ring's state", eb.closed.Load)
}

// Workers report their compute time per token, memory pressure and slice
// transfer to the head; the head measures its own compute.
func TestWorkerStatsReachTheHead(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ma, mb := openModel(t), openModel(t)
	ea, eb := &ggmlengine.GGML{M: ma, NCtx: 64, Threads: 1}, &ggmlengine.GGML{M: mb, NCtx: 64, Threads: 1}
	defer ea.Close()
	defer eb.Close()
	a, b := startPair(t, ctx, ea, eb, twoDevicePlan(ma), func(_, b *Driver) {
		b.Measure = func() Measures { return Measures{Pressure: 0.25, Fetched: 7, SliceBytes: 9} }
	})
	go func() {
		for range b.Out() {
		}
	}()
	in, pos := prompt, 0
	const n = 4
	for range n {
		if err := a.Post(ctx, ring.StartToken{Tokens: in, Pos: pos}); err != nil {
			t.Fatal(err)
		}
		tok := await[ring.EmitToken](t, a).Token
		pos += len(in)
		in = []int32{tok}
	}
	// The report of the last pass may still be on its way.
	testwait.True(t, 30*time.Second, "the ring's state", func() bool { return a.Stats()[tid("b")].Tokens == n-1 })
	got := a.Stats()
	wb := got[tid("b")]
	if wb.ComputeUS == 0 || wb.Plan != 1 || wb.Pressure != 2500 || wb.Fetched != 7 || wb.SliceBytes != 9 {
		t.Errorf("worker stats at the head: %+v", wb)
	}
	// The prompt pass is not a token's cost: n-1 decode passes.
	if wa := got[tid("a")]; wa.Tokens != n-1 || wa.ComputeUS == 0 {
		t.Errorf("head's own stats: %+v", wa)
	}
}

// A pass of more tokens than a window evaluates at once (ggml.MaxBatch) is
// split, and gives the tokens the single-device engine gives.
func TestLongPassIsSplit(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := ggml.MaxBatch + 100
	var long []int32
	for len(long) < n {
		long = append(long, prompt...)
	}
	long = long[:n]

	m := openModel(t)
	w, err := m.NewWindow(ggml.WindowParams{First: 0, Last: m.Info().NLayer, Embed: true, Output: true, NCtx: 1024, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var want []int32
	var logits []float32
	for i := 0; i < len(long); i += ggml.MaxBatch {
		if logits, err = w.EvalTokens(long[i:min(i+ggml.MaxBatch, len(long))], i); err != nil {
			t.Fatal(err)
		}
	}
	pos := len(long)
	for range 4 {
		tok := ggmlengine.Greedy(logits)
		want = append(want, tok)
		if logits, err = w.EvalTokens([]int32{tok}, pos); err != nil {
			t.Fatal(err)
		}
		pos++
	}

	ma, mb := openModel(t), openModel(t)
	ea, eb := &ggmlengine.GGML{M: ma, NCtx: 1024, Threads: 1}, &ggmlengine.GGML{M: mb, NCtx: 1024, Threads: 1}
	defer ea.Close()
	defer eb.Close()
	a, b := startPair(t, ctx, ea, eb, twoDevicePlan(ma), nil)
	go func() {
		for range b.Out() {
		}
	}()
	var got []int32
	in, pos := long, 0
	for range 4 {
		if err := a.Post(ctx, ring.StartToken{Tokens: in, Pos: pos}); err != nil {
			t.Fatal(err)
		}
		tok := await[ring.EmitToken](t, a).Token
		got = append(got, tok)
		pos += len(in)
		in = []int32{tok}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tokens after a %d-token pass (-single device +ring)\n%s", len(long), diff)
	}
}
