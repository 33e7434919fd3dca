package ggmlengine

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/discovery/deviceid"
	"homering/engine/ggml"
	"homering/engine/ring/wire"
)

// Halda's n_m are the first n layers of each window; a window split over
// slice files (GGML.Parts) gives each sub-window its share of them.
func TestGPULayers(t *testing.T) {
	tests := []struct {
		name        string
		w           wire.Range
		n           int
		first, last int // the sub-window
		want        []int
	}{
		{"none", rg(4, 8), 0, 4, 8, nil},
		{"first two of a whole window", rg(4, 8), 2, 4, 8, []int{4, 5}},
		{"every layer", rg(4, 8), 4, 4, 8, []int{4, 5, 6, 7}},
		{"first sub-window holds them all", rg(4, 8), 2, 4, 7, []int{4, 5}},
		{"they cross into the second sub-window", rg(4, 8), 3, 6, 8, []int{6}},
		{"second sub-window past them", rg(4, 8), 2, 6, 8, nil},
		{"n past the window is clipped to it", rg(0, 2), 5, 0, 2, []int{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, gpuLayers(tt.w, tt.n, tt.first, tt.last)); diff != "" {
				t.Errorf("gpuLayers(%s, %d, %d, %d) (-want +got)\n%s", tt.w, tt.n, tt.first, tt.last, diff)
			}
		})
	}
}

// The plan's GPU layers reach the engine: this test process loads no GPU
// backend, so a device given GPU layers fails Prepare with ggml.ErrNoGPU
// (and the driver refuses the plan) where the same plan without them
// prepares. The GPU path itself runs in engine/ring/driver/gpudriver on
// lavapipe.
func TestPrepareGPULayersWithoutGPU(t *testing.T) {
	if ggml.GPUCount() != 0 {
		t.Fatalf("this package's tests must run without a GPU backend; ggml sees %d GPU(s)", ggml.GPUCount())
	}
	m, err := ggml.Open(stories)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	info := m.Info()
	for _, tt := range []struct {
		name string
		gpu  int
		want error
	}{
		{"CPU only", 0, nil},
		{"one GPU layer", 1, ggml.ErrNoGPU},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plan := &wire.Plan{ID: 1, K: 1, Layers: info.NLayer, NEmbd: info.NEmbd, DType: wire.F32, Devices: []wire.Device{
				{ID: deviceid.ForName("head"), GPULayers: tt.gpu, Windows: []wire.Range{rg(0, info.NLayer)}}}}
			g := &GGML{M: m, NCtx: 16, Threads: 1}
			defer g.Close()
			if err := g.Prepare(plan, 0); !errors.Is(err, tt.want) {
				t.Fatalf("Prepare = %v, want %v", err, tt.want)
			}
		})
	}
}

// A window is cut at the parts' boundaries; a layer no part holds is an
// error.
func TestSplitAtParts(t *testing.T) {
	var m1, m2 ggml.Model // split only compares and copies the pointers
	g := &GGML{Parts: []Part{{First: 2, Last: 4, M: &m1}, {First: 4, Last: 9, M: &m2}}}
	for _, tt := range []struct {
		name string
		w    wire.Range
		want []Part
		err  bool
	}{
		{"inside one part", rg(2, 4), []Part{{First: 2, Last: 4, M: &m1}}, false},
		{"across two", rg(3, 6), []Part{{First: 3, Last: 4, M: &m1}, {First: 4, Last: 6, M: &m2}}, false},
		{"a layer no part holds", rg(1, 3), nil, true},
		{"past the last part", rg(8, 10), nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := g.split(tt.w)
			if (err != nil) != tt.err {
				t.Fatalf("split(%v) error %v, want error %v", tt.w, err, tt.err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("split(%v) = %d parts, want %d", tt.w, len(got), len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("part %d: got [%d, %d) on %p, want [%d, %d) on %p", i, got[i].First, got[i].Last, got[i].M, tt.want[i].First, tt.want[i].Last, tt.want[i].M)
				}
			}
		})
	}
}

// stories is a small trained llama (5 layers), as in the driver's tests.
const stories = "../../../../shared/models/stories260K.gguf"

func rg(a, b int) wire.Range { return wire.Range{Start: a, End: b} }
