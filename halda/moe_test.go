package halda_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/halda"
	"homering/halda/haldatest"
	"homering/halda/lpsolve"
)

// moeModel is handModel's 1 GB layer as a mixture of experts: 0.2 GB read
// by every token, 0.8 GB of 8 experts of which a token reads 2 (0.4 GB
// read, 1 GFLOP). Skewed routing: 2 hot experts (0.2 GB) make the hot set
// 0.4 GB, and the 6 cold ones are read at ρ = 0.15 a token.
func moeModel(layers int) halda.Model {
	m := handModel(layers)
	m.LayerExpertBytes = 8 * gb / 10
	m.LayerReadBytes = 4 * gb / 10
	m.LayerHotBytes = 4 * gb / 10
	m.ColdReadRate = 0.15
	return m
}

// uniformMoE is moeModel routed uniformly: no expert is hot (h = the
// always-read 0.2 GB) and every expert byte is read at top-k/n = 2/8.
func uniformMoE(layers int) halda.Model {
	m := moeModel(layers)
	m.LayerHotBytes, m.ColdReadRate = 2*gb/10, 0.25
	return m
}

func withSlice(m halda.Model, s int64) halda.Model {
	m.ExpertSliceBytes = s
	return m
}

func withReadAhead(d halda.Device, r int64) halda.Device {
	d.DiskReadAheadBytes = r
	return d
}

// TestMoE: Halda charges a MoE layer what a token reads (compute, memory
// access, re-reads) and asks memory only for the hot set (package doc,
// "Mixture of experts"). α = 10 ms of FLOPs + 0.4 GB at 100 GB/s = 14 ms.
func TestMoE(t *testing.T) {
	tests := []struct {
		name     string
		why      string
		p        halda.Problem
		want     []row
		wantK    int
		wantMs   float64
		wantDisk float64
	}{{
		name:   "fits: memory access charges the 0.4 GB a token reads, not the 1 GB layer",
		why:    "4 layers × (10 ms + 4 ms); dense would be 4 × 20 ms",
		p:      halda.Problem{Model: moeModel(4), Devices: []halda.Device{cpu("a", 8*gb, 1e9, nil)}},
		want:   []row{{"a", halda.M4, 4, 0}},
		wantK:  1,
		wantMs: 4 * 14,
	}, {
		name:     "hot set resident: the 0.5 GB overflow is cold experts re-read at ρ",
		why:      "hot set 4 × 0.4 GB ≤ 3.5 GB, so k = 1 (dense needs k = 2 and re-reads 0.5 GB: 500 ms); 0.15 × 0.5 GB at 1 GB/s",
		p:        halda.Problem{Model: moeModel(4), Devices: []halda.Device{cpu("a", 3*gb+gb/2, 1e9, nil)}},
		want:     []row{{"a", halda.M3, 4, 0}},
		wantK:    1,
		wantMs:   4*14 + 75,
		wantDisk: 75,
	}, {
		name:     "uniform routing: no hot experts, the overflow re-read at top-k/n",
		why:      "0.25 × 0.5 GB at 1 GB/s",
		p:        halda.Problem{Model: uniformMoE(4), Devices: []halda.Device{cpu("a", 3*gb+gb/2, 1e9, nil)}},
		want:     []row{{"a", halda.M3, 4, 0}},
		wantK:    1,
		wantMs:   4*14 + 125,
		wantDisk: 125,
	}, {
		name:     "hot set too large: every byte a token reads misses",
		why:      "hot set 1.6 GB > 1 GB for every k (all the device's layers count): 4 × 0.4 GB re-read at 1 GB/s, not the 3 GB overflow",
		p:        halda.Problem{Model: moeModel(4), Devices: []halda.Device{cpu("a", gb, 1e9, nil)}},
		want:     []row{{"a", halda.M3, 4, 0}},
		wantK:    1,
		wantMs:   4*14 + 1600,
		wantDisk: 1600,
	}, {
		name: "two devices: the hot row decides the split, not the layer bytes",
		why: "8 layers: b's disk is too slow to page, so it holds 2 (M4); a's hot row (0.4 GB hot + 0.2 GB of expert reads a layer) fits 4 of its 6 in 2.5 GB, " +
			"so it re-reads what its 6 layers' tokens read, 2.4 GB at 2 GB/s; 8 × 14 ms + one round of two 1 ms links",
		p: halda.Problem{Model: moeModel(8), Devices: []halda.Device{
			cpu("a", 2*gb+gb/2, 2e9, map[string]float64{"b": 1e-3}), cpu("b", 2*gb+gb/2, 50e6, map[string]float64{"a": 1e-3})}},
		want:     []row{{"a", halda.M3, 6, 0}, {"b", halda.M4, 2, 0}},
		wantK:    1,
		wantMs:   8*14 + 1200 + 2,
		wantDisk: 1200,
	}, {
		name:     "hot row without read-around: 4 × (0.4 + 0.2) GB fit in 2.5 GB",
		why:      "overflow 4 − 2.5 = 1.5 GB re-read at ρ = 0.15 at 1 GB/s",
		p:        halda.Problem{Model: moeModel(4), Devices: []halda.Device{cpu("a", 2*gb+gb/2, 1e9, nil)}},
		want:     []row{{"a", halda.M3, 4, 0}},
		wantK:    1,
		wantMs:   4*14 + 225,
		wantDisk: 225,
	}, {
		name: "read-around doubles each expert miss: the hot row no longer fits and every read misses",
		why: "50 MB slices, 50 MB read-around: φ = 1 + 50/50 = 2, hot row 4 × (0.4 + 2 × 0.2) = 3.2 GB > 2.5 GB; " +
			"a token re-reads 4 × (0.2 + 2 × 0.2) GB at 1 GB/s",
		p:        halda.Problem{Model: withSlice(moeModel(4), 50e6), Devices: []halda.Device{withReadAhead(cpu("a", 2*gb+gb/2, 1e9, nil), 50e6)}},
		want:     []row{{"a", halda.M3, 4, 0}},
		wantK:    1,
		wantMs:   4*14 + 2400,
		wantDisk: 2400,
	}, {
		name:     "read-around is capped at the whole stack",
		why:      "1 MB slices, 8 MB read-around: φ = min(9, e/x_e = 4): a token re-reads 4 × (0.2 + 0.8) GB, the whole layers",
		p:        halda.Problem{Model: withSlice(moeModel(4), 1e6), Devices: []halda.Device{withReadAhead(cpu("a", 2*gb+gb/2, 1e9, nil), 8e6)}},
		want:     []row{{"a", halda.M3, 4, 0}},
		wantK:    1,
		wantMs:   4*14 + 4000,
		wantDisk: 4000,
	}, {
		name:     "a slice larger than the read-around still pays it once",
		why:      "200 MB slices, 50 MB read-around: φ = 1.25, hot row 4 × (0.4 + 0.25) = 2.6 GB > 2.5 GB: a token re-reads 4 × (0.2 + 0.25) GB",
		p:        halda.Problem{Model: withSlice(moeModel(4), 200e6), Devices: []halda.Device{withReadAhead(cpu("a", 2*gb+gb/2, 1e9, nil), 50e6)}},
		want:     []row{{"a", halda.M3, 4, 0}},
		wantK:    1,
		wantMs:   4*14 + 1800,
		wantDisk: 1800,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := halda.Solve(tt.p, lpsolve.Solver{})
			if err != nil {
				t.Fatalf("%s: %v", tt.why, err)
			}
			if pl.K != tt.wantK {
				t.Errorf("k = %d, want %d (%s)", pl.K, tt.wantK, tt.why)
			}
			if diff := cmp.Diff(tt.want, rows(pl)); diff != "" {
				t.Errorf("ring (-want +got):\n%s\n%s", diff, tt.why)
			}
			if !near(pl.PredictedMs, tt.wantMs) || !near(pl.DiskMs, tt.wantDisk) {
				t.Errorf("predicted %.6f ms (disk %.6f), want %.6f (disk %.6f): %s", pl.PredictedMs, pl.DiskMs, tt.wantMs, tt.wantDisk, tt.why)
			}
			checkLayers(t, tt.p.Model.Layers, pl)
			checkBaselines(t, tt.p, pl)
		})
	}
}

// TestMoEValidation: the MoE terms come together and within the layer.
func TestMoEValidation(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*halda.Model)
		field string
	}{
		{"read more than the layer", func(m *halda.Model) { m.LayerReadBytes = 2 * gb }, "model.layer_read_bytes"},
		{"hot set without reads", func(m *halda.Model) { m.LayerReadBytes = 0 }, "model.layer_read_bytes"},
		{"negative hot set", func(m *halda.Model) { m.LayerHotBytes = -1 }, "model.layer_hot_bytes"},
		{"no cold rate", func(m *halda.Model) { m.ColdReadRate = 0 }, "model.cold_read_rate"},
		{"cold rate above 1", func(m *halda.Model) { m.ColdReadRate = 1.5 }, "model.cold_read_rate"},
		{"experts beyond the layer", func(m *halda.Model) { m.LayerExpertBytes = 2 * gb }, "model.layer_expert_bytes"},
		{"slice beyond the experts", func(m *halda.Model) { m.ExpertSliceBytes = gb }, "model.expert_slice_bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := halda.Problem{Model: moeModel(4), Devices: []halda.Device{cpu("a", 8*gb, 1e9, nil)}}
			tt.edit(&p.Model)
			_, err := halda.Solve(p, lpsolve.Solver{})
			var v *halda.ValidationError
			if !errors.As(err, &v) || v.Field != tt.field {
				t.Fatalf("err = %v, want a ValidationError on %s", err, tt.field)
			}
		})
	}
}

// TestMoERandom: on random problems turned MoE (the layer as 20% always-
// read and 80% experts, top-2 of 8, a random hot set and cold rate, random
// read-arounds), lp_solve and enumeration agree, the case form equals the
// full model at every ILP optimum, and Halda is never worse than the
// baselines.
func TestMoERandom(t *testing.T) {
	r := rand.New(rand.NewPCG(2026, 20))
	cs := &crossSolver{t: t}
	var plans, consistency int
	var worstGap float64
	for i := range 300 {
		p := haldatest.RandomProblem(r, 4, 16)
		var b int64
		for _, v := range p.Model.LayerBytes {
			b += v
		}
		e := b * 8 / 10
		a := b - e
		p.Model.LayerExpertBytes = e
		p.Model.LayerReadBytes = max(a+e/4, 1)
		p.Model.LayerHotBytes = a + e*int64(r.IntN(5))/8
		p.Model.ColdReadRate = 0.05 + 0.2*r.Float64()
		p.Model.ExpertSliceBytes = e / 24
		for j := range p.Devices {
			p.Devices[j].DiskReadAheadBytes = int64(r.IntN(3)) * e / 24
		}
		pl, err := halda.Solve(p, cs)
		pe, erre := halda.Solve(p, haldatest.Exhaustive{})
		if (err == nil) != (erre == nil) {
			t.Fatalf("problem %d: lp_solve run says %v, enumeration run says %v", i, err, erre)
		}
		if err != nil {
			if !errors.Is(err, halda.ErrNoFeasiblePlan) {
				t.Fatalf("problem %d: %v", i, err)
			}
			continue
		}
		plans++
		if !near(pl.PredictedMs, pe.PredictedMs) {
			t.Errorf("problem %d: lp_solve plan %.12f ms, enumeration plan %.12f ms", i, pl.PredictedMs, pe.PredictedMs)
		}
		checkLayers(t, p.Model.Layers, pl)
		checkBaselines(t, p, pl)
		n, gap, err := halda.CheckConsistency(p, haldatest.Exhaustive{})
		if err != nil {
			t.Fatal(err)
		}
		consistency += n
		worstGap = max(worstGap, gap)
	}
	if worstGap > 1e-9 {
		t.Errorf("case form and full model differ by up to %.3g (relative)", worstGap)
	}
	if plans < 100 || consistency < 300 {
		t.Errorf("only %d plans and %d consistent points; the generator has drifted", plans, consistency)
	}
	t.Logf("300 MoE problems: %d plans, %d ILPs compared, %d case-form points consistent (worst %.3g)", plans, cs.checked, consistency, worstGap)
}
