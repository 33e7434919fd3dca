package ggmlengine

import (
	"homering/engine/ggml"
	"homering/engine/ring/wire"
)

// Memory is the anonymous memory of the open windows: their KV caches and
// ggml's compute buffers, which grow to the largest batch evaluated. It
// waits for a Compute in flight.
func (g *GGML) Memory() (kv, compute int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rs := range g.allRounds() {
		for _, r := range rs {
			for _, w := range r.subs {
				kv += w.KVBytes()
				compute += w.ComputeBytes()
			}
		}
	}
	if g.out != nil {
		compute += g.out.ComputeBytes()
	}
	return kv, compute
}

// Streams is how many streams' windows (and KV caches) are open: stream
// 0's and every other stream computed on the plan so far. A plan's memory
// holds as many as it admits (halda.Plan.Streams); the head's job numbers
// streams below that.
func (g *GGML) Streams() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.allRounds())
}

// allRounds are the windows of every stream, stream 0's first (g.mu held).
func (g *GGML) allRounds() [][]round {
	out := [][]round{g.wins}
	for s := 1; s < wire.MaxStreams; s++ {
		if rs, ok := g.streams[s]; ok {
			out = append(out, rs)
		}
	}
	return out
}

// kvRound is the granularity of the windows' KV caches: 32 cells, not
// llama.cpp's 256, computes the same bits (engine/ggml), and a ring job's
// cache holds only its request, so a 60-token chat keeps 64 cells: on the
// bench model (n_embd_gqa 512, F16) 0.5 MB per layer becomes 0.125 MB.
const kvRound = 32

// GPUMemory is what the open windows hold on their GPU (weights copied
// there, KV caches, compute buffers: measured, where the plan's VRAM is
// Halda's estimate) and what the GPU reports free now; zeros without GPU
// layers.
func (g *GGML) GPUMemory() (used, free int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	add := func(w *ggml.Window) {
		_, gpu := w.Memory()
		if n := gpu.KV + gpu.Compute + gpu.Weights; n > 0 {
			used += n
			free = w.GPUFree()
		}
	}
	for _, rs := range g.allRounds() {
		for _, r := range rs {
			for _, w := range r.subs {
				add(w)
			}
		}
	}
	if g.out != nil {
		add(g.out)
	}
	return used, free
}
