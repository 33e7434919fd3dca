package ggml

import "slices"

// StepBytes is what a one-token step of the window at position pos reads
// from host memory: every weight it reads from the mapping (WeightRanges:
// its CPU layers and output head) once, one row of the embedding table (not
// the table: a step looks up one token), and the F16 K and V of positions
// [0, pos] of each CPU layer. It is
// the numerator of a decode's bytes per second (bench/engine.sh), to set
// against the machine's read bandwidth. Norms and biases count too (they
// are read); a MoE model's unused experts and a sliding window's unread
// positions count as read, so for those it is an upper bound.
func (w *Window) StepBytes(pos int) int64 {
	var n int64
	for _, r := range w.WeightRanges() {
		n += r.Len
	}
	info := w.m.Info()
	embdRead := w.p.Output && !w.p.OutputGPU && !w.m.hasOutputWeight() // a tied output head reads it all
	if t, ok := w.m.file.tensor("token_embd.weight"); ok && w.p.Embed && !embdRead && info.NVocab > 0 {
		n += t.size/int64(info.NVocab) - t.size
	}
	cpuLayers := 0
	for il := w.p.First; il < w.p.Last; il++ {
		if !slices.Contains(w.p.GPULayers, il) {
			cpuLayers++
		}
	}
	const f16 = 2
	return n + int64(cpuLayers)*2*int64(info.NHeadKV*info.NEmbdHead)*f16*int64(pos+1)
}

func (m *Model) hasOutputWeight() bool {
	_, ok := m.file.tensor("output.weight")
	return ok
}
