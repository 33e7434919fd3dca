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
// by every token, 0.8 GB of 16 experts of which a token reads 1 (0.25 GB
// read, 1 GFLOP). Skewed routing: 2 hot experts (0.1 GB) make the hot set
// 0.3 GB, and the cold ones are read at ρ = 0.04 a token.
func moeModel(layers int) halda.Model {
	m := handModel(layers)
	m.LayerExpertBytes = 8 * gb / 10
	m.LayerReadBytes = gb / 4
	m.LayerHotBytes = 3 * gb / 10
	m.ColdReadRate = 0.04
	return m
}

// uniformMoE is moeModel routed uniformly: no expert is hot (h = the
// always-read 0.2 GB) and every expert byte is read at top-k/n = 1/16.
func uniformMoE(layers int) halda.Model {
	m := moeModel(layers)
	m.LayerHotBytes, m.ColdReadRate = 2*gb/10, 1.0/16
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
// access, re-reads) and asks memory only for the hot set and, on the
// inactive list, one token's expert reads (package doc,
// "Mixture of experts"). α = 10 ms of FLOPs + 0.25 GB at 100 GB/s = 12.5 ms.
// Inactive list: d/(1+⌊√(10·GiB)⌋), d/2 under 1 GiB.
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
		name:   "fits: memory access charges the 0.25 GB a token reads, not the 1 GB layer",
		why:    "4 layers × (10 ms + 2.5 ms); dense would be 4 × 20 ms",
		p:      halda.Problem{Model: moeModel(4), Devices: []halda.Device{cpu("a", 8*gb, 1e9, nil)}},
		want:   []row{{"a", halda.M4, 4, 0}},
		wantK:  1,
		wantMs: 4 * 12.5,
	}, {
		name: "hot set resident: the 0.5 GB overflow is cold experts re-read at ρ",
		why: "3.5 GB: inactive 3.5/6 = 0.58 GB ≥ 4 × 0.05 GB of expert reads, active 2.92 GB ≥ 4 × 0.3 GB hot, so k = 1 " +
			"(dense needs k = 2 and re-reads 0.5 GB: 500 ms); 0.04 × 0.5 GB at 1 GB/s",
		p:        halda.Problem{Model: moeModel(4), Devices: []halda.Device{cpu("a", 3*gb+gb/2, 1e9, nil)}},
		want:     []row{{"a", halda.M3, 4, 0}},
		wantK:    1,
		wantMs:   4*12.5 + 20,
		wantDisk: 20,
	}, {
		name:     "uniform routing: no hot experts, the overflow re-read at top-k/n",
		why:      "0.5 GB / 16 at 1 GB/s",
		p:        halda.Problem{Model: uniformMoE(4), Devices: []halda.Device{cpu("a", 3*gb+gb/2, 1e9, nil)}},
		want:     []row{{"a", halda.M3, 4, 0}},
		wantK:    1,
		wantMs:   4*12.5 + 31.25,
		wantDisk: 31.25,
	}, {
		name:     "hot set larger than memory: every byte a token reads misses",
		why:      "1 GB < 4 × 0.3 GB hot, for every k (all the device's layers count): 4 × 0.25 GB re-read at 1 GB/s, not the 3 GB overflow",
		p:        halda.Problem{Model: moeModel(4), Devices: []halda.Device{cpu("a", gb, 1e9, nil)}},
		want:     []row{{"a", halda.M3, 4, 0}},
		wantK:    1,
		wantMs:   4*12.5 + 1000,
		wantDisk: 1000,
	}, {
		name: "two devices: the hot rows decide the split, not the layer bytes",
		why: "8 layers: b's disk is too slow to page, so it holds 2 (M4); a (2.5 GB, inactive 0.5 GB) keeps 6 layers' hot sets (1.8 GB) " +
			"and reads (0.3 GB): overflow 3.5 GB × 0.04 at 2 GB/s = 70 ms; a = 7, b = 1 pages 4.5 GB (90 ms), a = 8 alone 5.5 GB (110 ms); " +
			"8 × 12.5 ms + one round of two 1 ms links",
		p: halda.Problem{Model: moeModel(8), Devices: []halda.Device{
			cpu("a", 2*gb+gb/2, 2e9, map[string]float64{"b": 1e-3}), cpu("b", 2*gb+gb/2, 50e6, map[string]float64{"a": 1e-3})}},
		want:     []row{{"a", halda.M3, 6, 0}, {"b", halda.M4, 2, 0}},
		wantK:    1,
		wantMs:   8*12.5 + 70 + 2,
		wantDisk: 70,
	}, {
		name:     "no read-around: one token's expert reads fit the inactive list",
		why:      "1.8 GB: inactive 0.45 GB ≥ 4 × 0.05, hot 1.2 ≤ 1.8: overflow 2.2 GB × 0.04 at 1 GB/s",
		p:        halda.Problem{Model: withSlice(moeModel(4), 10e6), Devices: []halda.Device{cpu("a", 1800e6, 1e9, nil)}},
		want:     []row{{"a", halda.M3, 4, 0}},
		wantK:    1,
		wantMs:   4*12.5 + 88,
		wantDisk: 88,
	}, {
		name: "read-around triples each expert miss: the reads overrun the inactive list and every read misses",
		why: "10 MB slices, 40 MB read-around: φ = 1 + 40/(2·10) = 3, 4 × 3 × 0.05 GB = 0.6 GB > 0.45 GB inactive; " +
			"a token re-reads 4 × (0.2 + 3 × 0.05) GB at 1 GB/s",
		p:        halda.Problem{Model: withSlice(moeModel(4), 10e6), Devices: []halda.Device{withReadAhead(cpu("a", 1800e6, 1e9, nil), 40e6)}},
		want:     []row{{"a", halda.M3, 4, 0}},
		wantK:    1,
		wantMs:   4*12.5 + 1400,
		wantDisk: 1400,
	}, {
		name:     "read-around is capped at the whole stack",
		why:      "1 MB slices, 64 MB read-around: φ = min(33, e/x_e = 16): a token re-reads 4 × (0.2 + 0.8) GB, the whole layers",
		p:        halda.Problem{Model: withSlice(moeModel(4), 1e6), Devices: []halda.Device{withReadAhead(cpu("a", 1800e6, 1e9, nil), 64e6)}},
		want:     []row{{"a", halda.M3, 4, 0}},
		wantK:    1,
		wantMs:   4*12.5 + 4000,
		wantDisk: 4000,
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
			d := &p.Devices[j]
			d.DiskReadAheadBytes = int64(r.IntN(3)) * e / 24
			// Disks at the paging threshold at least: Halda never pages
			// from a slower one (s_threshold), while the baselines' full-
			// model score may, and paging at ρ is cheap enough that such a
			// baseline plan can beat every plan Halda allows.
			d.DiskSeqBytesPerSec = max(d.DiskSeqBytesPerSec, halda.DefaultDiskThreshold)
			d.DiskRandBytesPerSec = max(d.DiskRandBytesPerSec, halda.DefaultDiskThreshold)
			if d.DiskFaultBytesPerSec > 0 {
				d.DiskFaultBytesPerSec = max(d.DiskFaultBytesPerSec, halda.DefaultDiskThreshold)
			}
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
