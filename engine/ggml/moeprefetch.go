package ggml

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"homering/engine/gguf"
)

// SetExpertFrequencies gives a MoE model's routing frequencies: freq[i][j]
// is how often layer i's router picks expert j per token (any scale: only
// the comparison with the layer's mean matters). nil forgets them (uniform).
// Window.PrefetchRanges warms the experts routed more often than the mean.
func (m *Model) SetExpertFrequencies(freq [][]float64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if freq != nil {
		if m.info.NExpert == 0 {
			return fmt.Errorf("ggml: routing frequencies for a model without experts")
		}
		if len(freq) != m.info.NLayer {
			return fmt.Errorf("ggml: routing frequencies for %d layers; the model has %d", len(freq), m.info.NLayer)
		}
		for i, f := range freq {
			if len(f) != m.info.NExpert {
				return fmt.Errorf("ggml: layer %d's routing frequencies count %d experts; the model has %d", i, len(f), m.info.NExpert)
			}
			for _, v := range f {
				if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
					return fmt.Errorf("ggml: layer %d has a routing frequency of %v; frequencies are finite and ≥ 0", i, v)
				}
			}
		}
	}
	m.expertFreq = slices.Clone(freq)
	return nil
}

// hotExperts lists the experts of layer il that a prefetch warms: those
// routed more often than the layer's mean. Uniform (no frequencies): none,
// since every expert is as likely as any other and warming them all is the
// whole layer. m.mu is held.
func (m *Model) hotExperts(il int) []int {
	if il >= len(m.expertFreq) {
		return nil
	}
	f := m.expertFreq[il]
	var sum float64
	for _, v := range f {
		sum += v
	}
	mean := sum / float64(len(f))
	var hot []int
	for j, v := range f {
		if v > mean*(1+1e-9) {
			hot = append(hot, j)
		}
	}
	return hot
}

// PrefetchRanges returns what a prefetch of this window warms, page-aligned,
// merged and sorted: WeightRanges for a dense model. For a MoE model, what
// the next token will most likely read: every tensor but the routed
// experts' stacks (attention, router, norms: read by every token) and, of
// the stacks, only the experts routed more often than uniformly
// (SetExpertFrequencies), never the whole window: a token reads k of n
// experts, and warming the rest would page out what the device needs.
func (w *Window) PrefetchRanges() []ByteRange {
	p := w.p
	if w.mapped {
		p.GPULayers, p.OutputGPU = nil, false
	}
	m := w.m
	if m.info.NExpert == 0 {
		return m.ranges(p)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// The window's ranges without its layers (input, output, rope factors),
	// then each CPU layer's tensors with expert stacks cut to hot experts.
	q := p
	q.First, q.Last = 0, 0
	rs := m.ranges(q)
	if p.Last > p.First {
		for _, name := range []string{"rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight"} {
			if t, ok := m.file.tensor(name); ok {
				rs = append(rs, ByteRange{t.offset, t.size})
			}
		}
	}
	for il := p.First; il < p.Last; il++ {
		if slices.Contains(p.GPULayers, il) {
			continue
		}
		hot := m.hotExperts(il)
		prefix := fmt.Sprintf("blk.%d.", il)
		for _, t := range m.file.tensors {
			if !strings.HasPrefix(t.name, prefix) {
				continue
			}
			if !gguf.IsExpertTensor(t.name) {
				rs = append(rs, ByteRange{t.offset, t.size})
				continue
			}
			// A stack's experts are its outermost dimension: expert j is
			// the j-th of n equal contiguous slices.
			n := t.ne[max(t.nDims-1, 0)]
			if n <= 0 || t.size%n != 0 {
				rs = append(rs, ByteRange{t.offset, t.size})
				continue
			}
			each := t.size / n
			for _, j := range hot {
				if int64(j) < n {
					rs = append(rs, ByteRange{t.offset + int64(j)*each, each})
				}
			}
		}
	}
	return mergeRanges(rs, int64(os.Getpagesize()), int64(len(m.data)))
}
