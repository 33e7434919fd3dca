package slice

import (
	"context"
	"math"
	"testing"

	"homering/engine/ggml"
)

// A slice is a GGUF the window engine opens and computes on exactly as on
// the source: a slice holding every layer (with input and output) gives the
// same logits, bit for bit, through windows [0,2) + [2,L).
// Partial slices are proved in engine/ggml (slice_test.go).
func TestWholeSliceComputesAsTheSource(t *testing.T) {
	src, spec := open(t, stories)
	spec.Layers = []Range{{0, 5}}
	spec.Input, spec.Output = true, true
	res, err := (&Builder{Dir: t.TempDir()}).Build(context.Background(), spec, src)
	if err != nil {
		t.Fatal(err)
	}
	tokens := []int32{1, 403, 407, 261, 3}
	logits := func(path string) []float32 {
		m, err := ggml.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		n := m.Info().NLayer
		a, err := m.NewWindow(ggml.WindowParams{First: 0, Last: 2, Embed: true, NCtx: 64, Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		b, err := m.NewWindow(ggml.WindowParams{First: 2, Last: n, Output: true, NCtx: 64, Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		h, err := a.EvalTokens(tokens, 0)
		if err != nil {
			t.Fatal(err)
		}
		out, err := b.EvalHidden(h, 0)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want, got := logits(stories), logits(res.Path)
	if len(want) == 0 || len(want) != len(got) {
		t.Fatalf("%d logits from the slice, %d from the source", len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			t.Fatalf("logit %d: slice %v, source %v", i, got[i], want[i])
		}
	}
}
