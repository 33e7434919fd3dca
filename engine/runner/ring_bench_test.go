// Not built for Windows: it uses ring_test.go's harness (signals, /proc).

//go:build !windows

package runner

import (
	"context"
	"os"
	"slices"
	"testing"
)

// benchModelEnv names a model for BenchmarkRingDecode instead of the small
// generated one CI runs, e.g. ../../testdata/models/llama-1g-Q8_0.gguf
// (~0.9 GB, 16 layers; a run takes minutes on two cores).
const benchModelEnv = "HOMERING_BENCH_MODEL"

// benchModel is the model the ring benchmarks run: $HOMERING_BENCH_MODEL,
// else smallModel.
func benchModel() string {
	if m := os.Getenv(benchModelEnv); m != "" {
		return m
	}
	return smallModel
}

// BenchmarkRingDecode compares decode speed of a 3-process ring (head and
// two workers on loopback, k = 1, layers split evenly) with the
// single-device engine on the same model, one thread per process. It
// reports both in tokens/s and their ratio (ring/single).
func BenchmarkRingDecode(b *testing.B) {
	model := benchModel()
	head, w1, w2 := newDeviceWith(b, Options{}), newDeviceWith(b, Options{}), newDeviceWith(b, Options{})
	serveRing(b, w1, head, w2)
	serveRing(b, w2, head, w1)
	lp := LoadParams{Model: model, NCtx: 256, Threads: 1}
	g := *greedy(32)
	g.Prompt = "Once upon a time"
	layers, nEmbd := modelShape(b, model)
	rp := ringParams(evenPlan(1, layers, nEmbd, 1, head, w1, w2), head, w1, w2)
	ignore := func(Token) error { return nil }
	// One run each first: the model mapped, the slices fetched.
	if _, err := head.sup.Generate(context.Background(), lp, g, ignore); err != nil {
		b.Fatal(err)
	}
	if _, err := head.sup.RingGenerate(context.Background(), lp, rp, g, ignore); err != nil {
		b.Fatal(err)
	}
	var single, ring, singleMS, ringMS float64
	for b.Loop() {
		var want, got []int32
		st, err := head.sup.Generate(context.Background(), lp, g, func(tk Token) error { want = append(want, tk.ID); return nil })
		if err != nil {
			b.Fatal(err)
		}
		single, singleMS = single+float64(st.DecodeTokens), singleMS+st.DecodeMS
		st, err = head.sup.RingGenerate(context.Background(), lp, rp, g, func(tk Token) error { got = append(got, tk.ID); return nil })
		if err != nil {
			b.Fatal(err)
		}
		if !slices.Equal(want, got) {
			b.Fatalf("the ring's tokens %v differ from the single device's %v", got, want)
		}
		ring, ringMS = ring+float64(st.DecodeTokens), ringMS+st.DecodeMS
	}
	b.ReportMetric(single/singleMS*1000, "single_tok/s")
	b.ReportMetric(ring/ringMS*1000, "ring_tok/s")
	b.ReportMetric((ring/ringMS)/(single/singleMS), "ring/single")
}
