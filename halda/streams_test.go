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

// kvModel is handModel with a KV cache of 0.25 GB per layer for the
// context (250 000 bytes a token, 1000 tokens): a CPU reading 100 GB/s
// spends 12.5 ms on a layer and its one stream's cache, so α = 22.5 ms at
// 100 GFLOP/s.
func kvModel(layers int) halda.Model {
	m := handModel(layers)
	m.KVBytesPerToken, m.ContextTokens = 250_000, 1000
	return m
}

func withFlops(d halda.Device, flops float64) halda.Device {
	d.CPUFlops = map[string]float64{"f16": flops}
	return d
}

// TestStreams checks hand-solved plans for several conversations at once
// (package doc, "Streams"): every stream's KV in the memory rows, one
// stream's in the compute rows, and the largest count within
// StreamSlowdown of one conversation's plan admitted.
func TestStreams(t *testing.T) {
	const ms = 1e-3
	link := func(to string) map[string]float64 { return map[string]float64{to: 1 * ms} }
	tests := []struct {
		name        string
		cite        string
		p           halda.Problem
		wantStreams int
		want        []row
		wantMs      float64
		wantRAM     []int64
	}{{
		name: "one stream: the paper's rows",
		cite: "000 A.3 row (32) with b' = b + KV: 4 layers of 1.25 GB in 16 GB",
		p: halda.Problem{Model: kvModel(4), Devices: []halda.Device{
			cpu("a", 16*gb, 50e6, nil)}},
		wantStreams: 1,
		want:        []row{{"a", halda.M4, 4, 0}},
		wantMs:      4 * 22.5,
		wantRAM:     []int64{5 * gb},
	}, {
		name: "four streams: the memory rows hold four caches, a token reads one",
		cite: "package doc, Streams: b' = b + 4 KV = 2 GB a layer, 8 GB of 16; α keeps r' = r + KV, so the time is one stream's",
		p: halda.Problem{Model: kvModel(4), Streams: 4, Devices: []halda.Device{
			cpu("a", 16*gb, 50e6, nil)}},
		wantStreams: 4,
		want:        []row{{"a", halda.M4, 4, 0}},
		wantMs:      4 * 22.5,
		wantRAM:     []int64{8 * gb},
	}, {
		name: "a device that holds one stream's caches but not four admits two",
		cite: "package doc, Streams: 6 GB holds 4 layers at 1.25 GB (one stream) and 1.5 GB (two), not 1.75 GB (three) or 2 GB (four); its disk is too slow to page",
		p: halda.Problem{Model: kvModel(4), Streams: 4, Devices: []halda.Device{
			cpu("a", 6*gb, 50e6, nil)}},
		wantStreams: 2,
		want:        []row{{"a", halda.M4, 4, 0}},
		wantMs:      4 * 22.5,
		wantRAM:     []int64{6 * gb},
	}, {
		name: "a device short of four streams' caches gets fewer layers",
		cite: "package doc, Streams: b (5 GB, α 20.5 ms) holds 4 layers for one stream and 2 for four; a (16 GB, α 22.5 ms) takes the other 6: 135 + 41 + 2 ms, 2.3% above one stream's 90 + 82 + 2 ms, within 5%",
		p: halda.Problem{Model: kvModel(8), Streams: 4, Devices: []halda.Device{
			cpu("a", 16*gb, 50e6, link("b")), withFlops(cpu("b", 5*gb, 50e6, link("a")), 125e9)}},
		wantStreams: 4,
		want:        []row{{"a", halda.M4, 6, 0}, {"b", halda.M4, 2, 0}},
		wantMs:      6*22.5 + 2*20.5 + 2,
		wantRAM:     []int64{12 * gb, 4 * gb},
	}, {
		name: "moving layers off the short device costs more than 5%: fewer streams",
		cite: "package doc, Streams: b (5 GB, α 17.5 ms) holds 4 layers for one stream (162 ms), 3 for two (167 ms, +3.1%), 2 for three or four (172 ms, +6.2%): two admitted",
		p: halda.Problem{Model: kvModel(8), Streams: 4, Devices: []halda.Device{
			cpu("a", 16*gb, 50e6, link("b")), withFlops(cpu("b", 5*gb, 50e6, link("a")), 200e9)}},
		wantStreams: 2,
		want:        []row{{"a", halda.M4, 5, 0}, {"b", halda.M4, 3, 0}},
		wantMs:      5*22.5 + 3*17.5 + 2,
		wantRAM:     []int64{15 * gb / 2, 9 * gb / 2},
	}, {
		name: "the same ring for one stream",
		cite: "000 A.3: b takes all it holds, 4 layers",
		p: halda.Problem{Model: kvModel(8), Streams: 1, Devices: []halda.Device{
			cpu("a", 16*gb, 50e6, link("b")), withFlops(cpu("b", 5*gb, 50e6, link("a")), 200e9)}},
		wantStreams: 1,
		want:        []row{{"a", halda.M4, 4, 0}, {"b", halda.M4, 4, 0}},
		wantMs:      4*22.5 + 4*17.5 + 2,
		wantRAM:     []int64{5 * gb, 5 * gb},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := halda.Solve(tt.p, lpsolve.Solver{})
			if err != nil {
				t.Fatalf("%s: %v", tt.cite, err)
			}
			if pl.Streams != tt.wantStreams {
				t.Errorf("streams = %d, want %d (%s)", pl.Streams, tt.wantStreams, tt.cite)
			}
			if diff := cmp.Diff(tt.want, rows(pl)); diff != "" {
				t.Errorf("ring (-want +got):\n%s\n%s", diff, tt.cite)
			}
			if !near(pl.PredictedMs, tt.wantMs) {
				t.Errorf("predicted %v ms, want %v (%s)", pl.PredictedMs, tt.wantMs, tt.cite)
			}
			var ram []int64
			for _, a := range pl.Ring {
				ram = append(ram, a.RAMBytes)
			}
			if diff := cmp.Diff(tt.wantRAM, ram); diff != "" {
				t.Errorf("RAM bytes (-want +got):\n%s\n%s", diff, tt.cite)
			}
		})
	}
}

// TestStreamsRescore checks that a rescored plan keeps the streams it
// admitted, not those the new problem asks for.
func TestStreamsRescore(t *testing.T) {
	p := halda.Problem{Model: kvModel(4), Streams: 4, Devices: []halda.Device{cpu("a", 6*gb, 50e6, nil)}}
	pl, err := halda.Solve(p, lpsolve.Solver{})
	if err != nil {
		t.Fatal(err)
	}
	p.Devices[0].RAMAvailable = 16 * gb // room for four now
	re, err := halda.Rescore(p, pl)
	if err != nil {
		t.Fatal(err)
	}
	if re.Streams != 2 || re.Ring[0].RAMBytes != 6*gb {
		t.Errorf("rescored: %d streams and %d RAM bytes, want the plan's 2 and 6 GB", re.Streams, re.Ring[0].RAMBytes)
	}
}

// TestStreamsValidation checks the bounds of Problem.Streams.
func TestStreamsValidation(t *testing.T) {
	for _, n := range []int{-1, halda.MaxStreams + 1} {
		p := halda.Problem{Model: kvModel(4), Streams: n, Devices: []halda.Device{cpu("a", 16*gb, 50e6, nil)}}
		_, err := halda.Solve(p, lpsolve.Solver{})
		var ve *halda.ValidationError
		if !errors.As(err, &ve) || ve.Field != "streams" {
			t.Errorf("streams %d: error %v, want a ValidationError on streams", n, err)
		}
	}
}

// TestStreamsMatchEnumeration is TestLPSolveMatchesEnumeration with
// several streams asked for: every ILP's lp_solve optimum equals
// enumeration's, both runs admit the same streams at the same time, the
// admitted plan is within StreamSlowdown of one stream's, and the case
// form with that many caches agrees with the full model.
func TestStreamsMatchEnumeration(t *testing.T) {
	r := rand.New(rand.NewPCG(2026, 19))
	cs := &crossSolver{t: t}
	admitted := map[int]int{}
	var worstGap float64
	for i := range 200 {
		p := haldatest.RandomProblem(r, 4, 16)
		p.Streams = 1 + r.IntN(4)
		pl, err := halda.Solve(p, cs)
		pe, erre := halda.Solve(p, haldatest.Exhaustive{})
		if (err == nil) != (erre == nil) {
			t.Fatalf("problem %d: lp_solve run says %v, enumeration run says %v", i, err, erre)
		}
		if err != nil {
			continue
		}
		if pl.Streams != pe.Streams || !near(pl.PredictedMs, pe.PredictedMs) {
			t.Errorf("problem %d: lp_solve admits %d streams at %.12f ms, enumeration %d at %.12f ms", i, pl.Streams, pl.PredictedMs, pe.Streams, pe.PredictedMs)
		}
		one := p
		one.Streams = 1
		po, err := halda.Solve(one, haldatest.Exhaustive{})
		if err != nil {
			t.Fatalf("problem %d: one stream: %v", i, err)
		}
		if pl.Streams < 1 || pl.Streams > p.Streams || pl.PredictedMs > po.PredictedMs*halda.StreamSlowdown*(1+1e-12) {
			t.Errorf("problem %d: %d of %d streams admitted at %.6f ms, one stream %.6f ms", i, pl.Streams, p.Streams, pl.PredictedMs, po.PredictedMs)
		}
		admitted[pl.Streams]++
		checkLayers(t, p.Model.Layers, pl)
		at := p
		at.Streams = pl.Streams
		_, gap, err := halda.CheckConsistency(at, haldatest.Exhaustive{})
		if err != nil {
			t.Fatal(err)
		}
		worstGap = max(worstGap, gap)
	}
	if worstGap > 1e-9 {
		t.Errorf("case form and full model differ by up to %.3g (relative)", worstGap)
	}
	t.Logf("200 problems asking 1-4 streams: admitted %v; %d ILPs compared", admitted, cs.checked)
}
