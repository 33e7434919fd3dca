package driver

// Memory is the anonymous memory of the open windows: their KV caches and
// ggml's compute buffers, which grow to the largest batch evaluated. It
// waits for a Compute in flight.
func (g *GGML) Memory() (kv, compute int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.wins {
		for _, w := range r.subs {
			kv += w.KVBytes()
			compute += w.ComputeBytes()
		}
	}
	if g.out != nil {
		compute += g.out.ComputeBytes()
	}
	return kv, compute
}
