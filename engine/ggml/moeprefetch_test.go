package ggml

import (
	"fmt"
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
