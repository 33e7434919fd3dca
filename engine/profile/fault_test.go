package profile

import (
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"homering/engine/profile/sysinfo"
)

func TestSweepOrder(t *testing.T) {
	// Two layers stored by name, as llama.cpp's converter writes them.
	layer := func(base int64) []tensorSpan {
		return []tensorSpan{
			{"attn_k.weight", base + 0, 10}, {"attn_norm.weight", base + 10, 1}, {"attn_output.weight", base + 11, 20},
			{"attn_q.weight", base + 31, 20}, {"attn_v.weight", base + 51, 10}, {"ffn_down.weight", base + 61, 50},
			{"ffn_gate.weight", base + 111, 50}, {"ffn_norm.weight", base + 161, 1}, {"ffn_up.weight", base + 162, 50},
			{"attn_q.bias", base + 212, 2},
		}
	}
	layers := [][]tensorSpan{layer(0), layer(214)}
	graph := func(base int64) []sysinfo.Extent {
		// A bias follows its matrix; the file's backward jumps stay.
		var out []sysinfo.Extent
		for _, e := range [][2]int64{{10, 1}, {31, 20}, {212, 2}, {51, 10}, {0, 10}, {11, 20}, {161, 1}, {111, 50}, {162, 50}, {61, 50}} {
			out = append(out, sysinfo.Extent{Off: base + e[0], Len: e[1]})
		}
		return out
	}
	tests := []struct {
		name  string
		first int
		limit int64
		want  []sysinfo.Extent
	}{
		{"one layer in graph order", 0, 1, graph(0)},
		{"from the second layer, wrapping", 1, 300, append(graph(214), graph(0)...)},
		{"no more layers than the model has", 0, 1 << 40, append(graph(0), graph(214)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, sweepOrder(layers, tt.first, tt.limit)); diff != "" {
				t.Errorf("sweepOrder (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("tile lays copies of a layer from 0", func(t *testing.T) {
		got := tile(layer(1000), 500)
		if len(got) != 2 || got[0][0].off != 0 || got[1][0].off != 214 || got[1][9].off != 214+212 {
			t.Errorf("tile = %v", got)
		}
	})
}

func TestMeasureFault(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Logf("page faults are measured on Linux only (%s)", runtime.GOOS)
		return
	}
	// The test model is too small to time: a scratch file laid out like its
	// layer, next to it (on disk, not tmpfs).
	r, scratch, err := measureFault(smallModel, "../../testdata/models", 24<<20, testLog(t))
	if err != nil || r <= 0 || !scratch {
		t.Errorf("measureFault(small model) = %v, scratch %v, %v; want a rate from a scratch file", r, scratch, err)
	}
	r, scratch, err = measureFault("", "../../testdata/models", 24<<20, testLog(t))
	if err != nil || r <= 0 || !scratch {
		t.Errorf("measureFault(no model) = %v, scratch %v, %v; want a rate from a scratch file", r, scratch, err)
	}
}

func TestFitProbe(t *testing.T) {
	pr := Probe{LayerSec: 0.010, LayerBytes: 40e6}
	tests := []struct {
		name      string
		flops     map[string]float64
		wantRead  float64
		wantScale float64
		wantFlops map[string]float64
	}{{
		name:      "sane rates: 3 ms compute, 7 ms reading 40 MB",
		flops:     map[string]float64{"q8_0": 30e9, "f16": 10e9},
		wantRead:  40e6 / 0.007,
		wantScale: 1,
		wantFlops: map[string]float64{"q8_0": 30e9, "f16": 10e9},
	}, {
		name:      "wrecked rates (100 ms of compute in a 10 ms layer) are raised to half the layer",
		flops:     map[string]float64{"q8_0": 0.9e9, "f16": 10e9},
		wantRead:  40e6 / 0.005,
		wantScale: 0.1 / 0.005,
		wantFlops: map[string]float64{"q8_0": 0.9e9 * 20, "f16": 10e9 * 20},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The layer: 90 MFLOP of q8_0 (3 ms at 30 GFLOPS); no f16.
			read, scale := fitProbe(tt.flops, map[string]float64{"q8_0": 90e6}, pr)
			approx := cmpopts.EquateApprox(1e-9, 0)
			if diff := cmp.Diff([]float64{tt.wantRead, tt.wantScale}, []float64{read, scale}, approx); diff != "" {
				t.Errorf("fitProbe (read, scale) (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantFlops, tt.flops, approx); diff != "" {
				t.Errorf("flops after fitProbe (-want +got):\n%s", diff)
			}
		})
	}
}
