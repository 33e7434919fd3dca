package profile

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"homering/engine/gguf"
	"homering/engine/profile/sysinfo"
)

// tensorSpan is one tensor of a layer: its name without "blk.N." and where
// its bytes are.
type tensorSpan struct {
	name      string
	off, size int64
}

// computeRank orders a layer's tensors as the engine's graph reads them
// (engine/ggml/engine.c expands Q, V, K as llama.cpp does, then the output
// projection; the feed-forward's swiglu takes gate before up); files store
// them in another
// order (alphabetical in llama.cpp's converter), so a page-faulting decode
// jumps back and forth inside each layer and read-ahead restarts at every
// jump. Unknown tensors (biases, extra norms) come last.
func computeRank(name string) int {
	base, _, _ := strings.Cut(name, ".")
	for i, n := range []string{"attn_norm", "attn_q", "attn_q_norm", "attn_v", "attn_k", "attn_k_norm",
		"attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"} {
		if base == n {
			return i
		}
	}
	return 100
}

// modelLayers lists each layer's tensors in file order.
func modelLayers(path string) ([][]tensorSpan, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	l, err := f.Layout()
	if err != nil {
		return nil, err
	}
	byName := map[string]gguf.TensorInfo{}
	for _, t := range f.Tensors {
		byName[t.Name] = t
	}
	var out [][]tensorSpan
	for i, p := range l.Layers {
		var layer []tensorSpan
		for _, n := range p.Tensors {
			t := byName[n]
			if t.Size > 0 {
				layer = append(layer, tensorSpan{name: strings.TrimPrefix(n, fmt.Sprintf("blk.%d.", i)), off: t.Offset, size: t.Size})
			}
		}
		if len(layer) > 0 {
			out = append(out, layer)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoShapes, path)
	}
	return out, nil
}

// defaultLayerSpans stands in for a model's layer (defaultLayer's matrices)
// laid out as llama.cpp's converter writes it: by name.
func defaultLayerSpans() []tensorSpan {
	sq := defaultLayer[0].bytes()
	ff := defaultLayer[1].bytes()
	var out []tensorSpan
	var off int64
	for _, t := range []struct {
		name string
		size int64
	}{{"attn_k.weight", sq}, {"attn_output.weight", sq}, {"attn_q.weight", sq}, {"attn_v.weight", sq},
		{"ffn_down.weight", ff}, {"ffn_gate.weight", ff}, {"ffn_up.weight", ff}} {
		out = append(out, tensorSpan{name: t.name, off: off, size: t.size})
		off += t.size
	}
	return out
}

// sweepOrder is the engine's read order over layers first, first+1, …
// (wrapping), up to limit bytes.
func sweepOrder(layers [][]tensorSpan, first int, limit int64) []sysinfo.Extent {
	var out []sysinfo.Extent
	var n int64
	for i := 0; i < len(layers) && n < limit; i++ {
		l := slices.Clone(layers[(first+i)%len(layers)])
		slices.SortStableFunc(l, func(a, b tensorSpan) int { return computeRank(a.name) - computeRank(b.name) })
		for _, t := range l {
			out = append(out, sysinfo.Extent{Off: t.off, Len: t.size})
			n += t.size
		}
	}
	return out
}

// tile lays copies of one layer end to end from offset 0 until they span at
// least size bytes: the layout of a scratch file standing in for a model.
func tile(layer []tensorSpan, size int64) [][]tensorSpan {
	lo, hi := layer[0].off, layer[0].off+layer[0].size
	for _, t := range layer {
		lo, hi = min(lo, t.off), max(hi, t.off+t.size)
	}
	span := hi - lo
	var out [][]tensorSpan
	for base := int64(0); base+span <= size || len(out) == 0; base += span {
		l := make([]tensorSpan, len(layer))
		for i, t := range layer {
			l[i] = tensorSpan{name: t.name, off: base + t.off - lo, size: t.size}
		}
		out = append(out, l)
	}
	return out
}

// faultSweeps is how many separate regions the page-fault sweep times; the
// median of their rates is kept (one stall on a shared disk moves one).
const faultSweeps = 3

// measureFault measures the page-fault read throughput on the model's own
// file, in the engine's order, over faultSweeps regions (a quarter, half
// and three quarters into the model) of limit/faultSweeps bytes each. A
// model too small to time, one another process keeps mapped, or no model
// gets a scratch file in dir laid out like the model's layer (or the
// default layer). It evicts the swept layers of the model from the page
// cache: the next decode reads them again (a fraction of a second, once).
// It returns the median rate and whether the scratch file was used.
func measureFault(model, dir string, limit int64, log *slog.Logger) (float64, bool, error) {
	var layers [][]tensorSpan
	if model != "" {
		var err error
		if layers, err = modelLayers(model); err != nil {
			return 0, false, err
		}
	}
	per := limit / faultSweeps
	sweep := func(path string, layers [][]tensorSpan) (float64, error) {
		var rates []float64
		for i := range faultSweeps {
			f, err := sysinfo.FaultThroughput(path, sweepOrder(layers, (i+1)*len(layers)/(faultSweeps+1), per), per)
			if err != nil {
				return 0, err
			}
			rates = append(rates, f.BytesPerSec)
		}
		slices.Sort(rates)
		return rates[len(rates)/2], nil
	}
	if layers != nil {
		var total int64
		for _, l := range layers {
			for _, t := range l {
				total += t.size
			}
		}
		if total >= 2*per {
			r, err := sweep(model, layers)
			if err == nil || !errors.Is(err, sysinfo.ErrFaultCached) {
				return r, false, err
			}
			log.Debug("profile: model pages stay cached; page faults timed on a scratch file", "err", err)
		}
	}
	template := defaultLayerSpans()
	if layers != nil {
		template = layers[len(layers)/2]
	}
	tiled := tile(template, per)
	var size int64
	for _, l := range tiled {
		for _, t := range l {
			size = max(size, t.off+t.size)
		}
	}
	name, err := sysinfo.ScratchFile(dir, size)
	if err != nil {
		return 0, true, err
	}
	defer os.Remove(name)
	// The scratch file is swept faultSweeps times, evicted before each.
	var rates []float64
	for range faultSweeps {
		f, err := sysinfo.FaultThroughput(name, sweepOrder(tiled, 0, per), per)
		if err != nil {
			return 0, true, fmt.Errorf("profile: page faults on a scratch file in %s: %w", filepath.Dir(name), err)
		}
		rates = append(rates, f.BytesPerSec)
	}
	slices.Sort(rates)
	return rates[len(rates)/2], true, nil
}
