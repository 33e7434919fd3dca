package profile

import (
	"fmt"
	"slices"

	"homering/engine/ggml"
	"homering/engine/profile/sysinfo"
)

// probeContext is the KV length the layer probe attends over: the engine
// pads the cache to 256 cells, so a short conversation attends over 256.
const probeContext = 256

// Probe is the thesis's layer-range probe (§1.5): decode steps of windows
// [0, 1) and [0, 1+n) of the real model on the engine (n = min(L−1, 4), or
// fewer when memory is short), so
// that the difference is the time of n whole layers (attention, norms, rope
// and per-op overheads included) and the embedding lookup and per-call
// setup cancel. The two windows step in turn and the per-step differences
// are reduced by their median: a slow spell of a shared machine hits both
// members of a pair, not one window's whole series.
type Probe struct {
	LayerSec   float64 `json:"layer_s"`     // one layer's decode-step time
	LayerBytes int64   `json:"layer_bytes"` // its weights plus KV at probeContext
	AttnFlops  float64 `json:"attn_flops"`  // its attention FLOPs at probeContext (F16 KV)
	Layers     int     `json:"layers"`      // n, the layers the difference spans
	// FlopsScale, when above 1, is the factor the matmul rates were raised
	// by to keep compute within half the layer's time (fitProbe).
	FlopsScale float64 `json:"flops_scale,omitempty"`
}

// probeSteps is how many paired steps are timed after two warm-up steps.
const probeSteps = 9

// probeLayers runs the probe. Its windows must stay resident or it times
// the disk: the longer one spans at most a third of avail (bytes of memory
// available), and at least two layers are needed.
// With gpu, every layer of both windows is on GPU 0 (avail is then its free
// memory).
func probeLayers(path string, threads int, avail int64, gpu bool) (Probe, error) {
	m, err := ggml.Open(path)
	if err != nil {
		return Probe{}, err
	}
	defer m.Close()
	info := m.Info()
	if info.NLayer < 2 {
		return Probe{}, fmt.Errorf("profile: the layer probe needs 2 layers, the model has %d", info.NLayer)
	}
	var weights int64
	for _, r := range m.LayerRanges(1) {
		weights += r.Len
	}
	n := min(info.NLayer-1, 4)
	if weights > 0 {
		n = max(1, min(n, int(avail/3/weights)-1))
	}
	prompt := []int32{1, 15, 29, 300}
	open := func(last int) (*ggml.Window, error) {
		wp := ggml.WindowParams{First: 0, Last: last, Embed: true, NCtx: probeContext, Threads: threads}
		if gpu {
			for il := range last {
				wp.GPULayers = append(wp.GPULayers, il)
			}
		}
		w, err := m.NewWindow(wp)
		if err != nil {
			return nil, err
		}
		if _, err := w.EvalTokens(prompt, 0); err != nil {
			_ = w.Close() // the evaluation's error is the one to report
			return nil, err
		}
		return w, nil
	}
	short, err := open(1)
	if err != nil {
		return Probe{}, err
	}
	defer short.Close()
	long, err := open(1 + n)
	if err != nil {
		return Probe{}, err
	}
	defer long.Close()
	step := func(w *ggml.Window, i int) (float64, error) {
		t := sysinfo.Now() // a step of a small model is microseconds: Windows' Go clock reads 0
		_, err := w.EvalTokens([]int32{int32(100 + i)}, len(prompt)+i)
		return sysinfo.Since(t).Seconds(), err
	}
	var diffs []float64
	for i := range probeSteps + 2 {
		a, err := step(short, i)
		if err != nil {
			return Probe{}, err
		}
		b, err := step(long, i)
		if err != nil {
			return Probe{}, err
		}
		if i >= 2 { // warm-up: pages and graph
			diffs = append(diffs, b-a)
		}
	}
	slices.Sort(diffs)
	kv := int64(2*info.NHeadKV*info.NEmbdHead*2) * probeContext
	return Probe{
		LayerSec:   max(diffs[len(diffs)/2], 0) / float64(n),
		LayerBytes: weights + kv,
		AttnFlops:  2 * probeContext * float64(2*info.NEmbdHead) * float64(info.NHead),
		Layers:     n,
	}, nil
}
