package ggml

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"homering/engine/gguf"
)

// overlap is how many bytes of [off, off+n) the ranges cover.
func overlap(rs []ByteRange, off, n int64) int64 {
	var c int64
	for _, r := range rs {
		lo, hi := max(r.Off, off), min(r.Off+r.Len, off+n)
		if hi > lo {
			c += hi - lo
		}
	}
	return c
}

// TestPrefetchRanges: a MoE window's prefetch warms every always-read
// tensor and, of the expert stacks, only the experts routed more often than
// the mean; a dense window's prefetch is its WeightRanges.
func TestPrefetchRanges(t *testing.T) {
	dense := openT(t, "../../testdata/models/llama-F32.gguf")
	dw := newWindowT(t, dense, WindowParams{First: 0, Last: dense.Info().NLayer, Embed: true, Output: true, NCtx: 64, Threads: 1})
	if got, want := dw.PrefetchRanges(), dw.WeightRanges(); !slices.Equal(got, want) {
		t.Errorf("dense: PrefetchRanges %v, want WeightRanges %v", got, want)
	}
	if err := dense.SetExpertFrequencies([][]float64{{1}}); err == nil {
		t.Error("SetExpertFrequencies accepted frequencies for a dense model")
	}

	m := openT(t, "../../testdata/models/qwen3moe-F32.gguf")
	info := m.Info()
	w := newWindowT(t, m, WindowParams{First: 1, Last: 3, NCtx: 64, Threads: 1})
	page := int64(os.Getpagesize())
	check := func(name string, hot map[int][]int) {
		t.Helper()
		rs := w.PrefetchRanges()
		for il := 1; il < 3; il++ {
			for _, tn := range m.file.tensors {
				if !strings.HasPrefix(tn.name, fmt.Sprintf("blk.%d.", il)) {
					continue
				}
				if !gguf.IsExpertTensor(tn.name) {
					if c := overlap(rs, tn.offset, tn.size); c != tn.size {
						t.Errorf("%s: %s covered %d of %d bytes", name, tn.name, c, tn.size)
					}
					continue
				}
				n := tn.ne[tn.nDims-1]
				each := tn.size / n
				for j := range n {
					c := overlap(rs, tn.offset+j*each, each)
					switch {
					case slices.Contains(hot[il], int(j)) && c != each:
						t.Errorf("%s: %s expert %d (hot) covered %d of %d bytes", name, tn.name, j, c, each)
					case !slices.Contains(hot[il], int(j)) && c > 2*page:
						// Page rounding at a hot neighbour's edge only.
						t.Errorf("%s: %s expert %d (cold) covered %d of %d bytes", name, tn.name, j, c, each)
					}
				}
			}
		}
	}
	check("uniform", nil)
	freq := make([][]float64, info.NLayer)
	for i := range freq {
		freq[i] = []float64{1, 1, 1, 1, 1, 1, 1, 1}
	}
	freq[1] = []float64{9, 1, 1, 1, 1, 5, 1, 1}
	freq[2] = []float64{1, 1, 1, 8, 1, 1, 1, 1}
	if err := m.SetExpertFrequencies(freq); err != nil {
		t.Fatal(err)
	}
	check("skewed", map[int][]int{1: {0, 5}, 2: {3}})
	for name, bad := range map[string][][]float64{
		"too few layers":  freq[:1],
		"too few experts": append([][]float64{{1, 2}}, freq[1:]...),
		"negative":        append([][]float64{{-1, 1, 1, 1, 1, 1, 1, 1}}, freq[1:]...),
	} {
		if err := m.SetExpertFrequencies(bad); err == nil {
			t.Errorf("%s: SetExpertFrequencies accepted it", name)
		}
	}
	if err := m.SetExpertFrequencies(nil); err != nil {
		t.Fatal(err)
	}
	check("forgotten", nil)
}

// TestExpertCounts: counting the routers' picks leaves the logits' bits
// alone, counts top-k picks per token and layer, sees the generated
// router's skew (expert 0 picked more than expert 7), and a dense model has
// none to count.
func TestExpertCounts(t *testing.T) {
	m := openT(t, "../../testdata/models/qwen3moe-F32.gguf")
	info := m.Info()
	p := WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, NCtx: 256, Threads: 1}
	plain, counted := newWindowT(t, m, p), newWindowT(t, m, p)
	if counted.ExpertCounts() != nil {
		t.Fatal("counts before counting")
	}
	if err := counted.CountExperts(true); err != nil {
		t.Fatal(err)
	}
	toks := make([]int32, 64)
	for i := range toks {
		toks[i] = int32(i * 37 % info.NVocab)
	}
	eval := func(tok []int32, pos int) {
		a, err := plain.EvalTokens(tok, pos)
		if err != nil {
			t.Fatal(err)
		}
		b, err := counted.EvalTokens(tok, pos)
		if err != nil {
			t.Fatal(err)
		}
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("at %d: logit %d is %v counting, %v not", pos, i, b[i], a[i])
			}
		}
	}
	eval(toks, 0)
	for i := range 16 {
		eval([]int32{int32(5 + 11*i)}, 64+i)
	}
	c := counted.ExpertCounts()
	if len(c) != info.NLayer {
		t.Fatalf("counts for %d layers, want %d", len(c), info.NLayer)
	}
	var first, last int64
	for il, row := range c {
		var sum int64
		for _, v := range row {
			sum += v
		}
		// 64 prompt rows and 16 decode steps, top-2 each; the last layer
		// runs its FFN on the output row only (llama.cpp's inp_out_ids).
		rows := int64(80)
		if il == info.NLayer-1 {
			rows = 17
		}
		if want := rows * int64(info.NExpertUsed); sum != want {
			t.Errorf("layer %d: %d picks, want %d", il, sum, want)
		}
		first += row[0]
		last += row[len(row)-1]
	}
	if first <= last {
		t.Errorf("expert 0 picked %d times, expert 7 %d: the generated router is skewed towards 0", first, last)
	}
	if err := counted.CountExperts(false); err != nil || counted.ExpertCounts() != nil {
		t.Errorf("after stopping: %v, counts %v", err, counted.ExpertCounts())
	}
	dense := openT(t, "../../testdata/models/llama-F32.gguf")
	dw := newWindowT(t, dense, WindowParams{First: 0, Last: 1, NCtx: 64, Threads: 1})
	if err := dw.CountExperts(true); !errors.Is(err, ErrNoExperts) {
		t.Errorf("dense model: %v, want ErrNoExperts", err)
	}
}
