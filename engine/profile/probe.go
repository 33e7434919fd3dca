package profile

import (
	"fmt"
	"slices"
	"time"

	"homering/engine/ggml"
)

// probeContext is the KV length the layer probe attends over: the engine
// pads the cache to 256 cells, so a short conversation attends over 256.
const probeContext = 256

// Probe is the thesis's layer-range probe (§1.5): decode steps of windows
// [0, 1) and [0, 3) of the real model on the engine, so that the difference
// is the time of two whole layers (attention, norms, rope and per-op
// overheads included) and the embedding lookup and per-call setup cancel.
type Probe struct {
	LayerSec   float64 `json:"layer_s"`     // one layer's decode-step time
	LayerBytes int64   `json:"layer_bytes"` // its weights plus KV at probeContext
	AttnFlops  float64 `json:"attn_flops"`  // its attention FLOPs at probeContext (F16 KV)
}

func probeLayers(path string, threads int) (Probe, error) {
	m, err := ggml.Open(path)
	if err != nil {
		return Probe{}, err
	}
	defer m.Close()
	info := m.Info()
	if info.NLayer < 3 {
		return Probe{}, fmt.Errorf("profile: the layer probe needs 3 layers, the model has %d", info.NLayer)
	}
	step := func(last int) (float64, error) {
		w, err := m.NewWindow(ggml.WindowParams{First: 0, Last: last, Embed: true, NCtx: probeContext, Threads: threads})
		if err != nil {
			return 0, err
		}
		defer w.Close()
		prompt := []int32{1, 15, 29, 300}
		if _, err := w.EvalTokens(prompt, 0); err != nil {
			return 0, err
		}
		var ts []float64
		for i := range 9 {
			t := time.Now()
			if _, err := w.EvalTokens([]int32{int32(100 + i)}, len(prompt)+i); err != nil {
				return 0, err
			}
			if i >= 2 { // warm-up: pages and graph
				ts = append(ts, time.Since(t).Seconds())
			}
		}
		slices.Sort(ts)
		return ts[len(ts)/2], nil
	}
	t1, err := step(1)
	if err != nil {
		return Probe{}, err
	}
	t3, err := step(3)
	if err != nil {
		return Probe{}, err
	}
	var weights int64
	for _, r := range m.LayerRanges(1) {
		weights += r.Len
	}
	kv := int64(2*info.NHeadKV*info.NEmbdHead*2) * probeContext
	return Probe{
		LayerSec:   max(t3-t1, 0) / 2,
		LayerBytes: weights + kv,
		AttnFlops:  2 * probeContext * float64(2*info.NEmbdHead) * float64(info.NHead),
	}, nil
}
