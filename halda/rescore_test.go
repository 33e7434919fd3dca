package halda_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/halda"
	"homering/halda/lpsolve"
)

// TestRescore: a plan scored again under the problem it was made for is
// unchanged; under changed profiles its prediction moves by what the
// change costs on paper; a plan that does not fit the problem is an error.
func TestRescore(t *testing.T) {
	links := map[string]map[string]float64{
		"a": {"b": 5e-3, "c": 5e-3}, "b": {"a": 5e-3, "c": 5e-3}, "c": {"a": 5e-3, "b": 5e-3},
	}
	devs := []halda.Device{cpu("a", 100*gb, 1e9, links["a"]), cpu("b", 100*gb, 1e9, links["b"]), cpu("c", 100*gb, 1e9, links["c"])}
	p := halda.Problem{Model: handModel(6), Devices: devs, KeepAllDevices: true, HeadHoldsLayers: true, Rounds: 2}
	plan, err := halda.Solve(p, lpsolve.Solver{})
	if err != nil {
		t.Fatal(err)
	}
	same, err := halda.Rescore(p, plan)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(plan, same); diff != "" {
		t.Errorf("rescored under its own problem (-made +rescored):\n%s", diff)
	}

	// b computes at half speed (α 40 ms a layer instead of 20): each of its
	// layers costs 20 ms more; nothing else changes.
	slow := slices.Clone(devs)
	slow[1].CPUFlops = map[string]float64{"f16": 50e9}
	slow[1].CPUReadBytesPerSec = 50e9
	ps := p
	ps.Devices = slow
	got, err := halda.Rescore(ps, plan)
	if err != nil {
		t.Fatal(err)
	}
	bIdx := slices.IndexFunc(plan.Ring, func(a halda.Assignment) bool { return a.Device == "b" })
	extra := float64(plan.K*plan.Ring[bIdx].W) * 20
	if !near(got.PredictedMs, plan.PredictedMs+extra) || !near(got.Ring[bIdx].ComputeMs, plan.Ring[bIdx].ComputeMs+extra) {
		t.Errorf("b at half speed: predicted %.3f ms (b computes %.3f), want %.3f (%.3f)",
			got.PredictedMs, got.Ring[bIdx].ComputeMs, plan.PredictedMs+extra, plan.Ring[bIdx].ComputeMs+extra)
	}
	if diff := cmp.Diff(rows(plan), rows(got)); diff != "" {
		t.Errorf("rescoring moved layers (-made +rescored):\n%s", diff)
	}
	for i := range plan.Ring {
		if !slices.Equal(plan.Ring[i].Layers, got.Ring[i].Layers) {
			t.Errorf("%s's windows %v became %v", plan.Ring[i].Device, plan.Ring[i].Layers, got.Ring[i].Layers)
		}
	}

	bad := []struct {
		name string
		edit func(*halda.Plan)
	}{
		{"a device the problem lacks", func(pl *halda.Plan) { pl.Ring[1].Device = "z" }},
		{"the head not first", func(pl *halda.Plan) { pl.Ring[0], pl.Ring[1] = pl.Ring[1], pl.Ring[0] }},
		{"a device twice", func(pl *halda.Plan) { pl.Ring[2].Device = pl.Ring[1].Device }},
		{"windows short of the layers", func(pl *halda.Plan) { pl.Ring[1].W-- }},
		{"more GPU layers than layers", func(pl *halda.Plan) { pl.Ring[1].N = pl.Ring[1].W + 1 }},
		{"no rounds", func(pl *halda.Plan) { pl.K = 0 }},
		{"rounds not dividing the layers", func(pl *halda.Plan) { pl.K = 4 }},
		{"an empty ring", func(pl *halda.Plan) { pl.Ring = nil }},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			pl := plan
			pl.Ring = slices.Clone(plan.Ring)
			tt.edit(&pl)
			if _, err := halda.Rescore(p, pl); !errors.Is(err, halda.ErrInvalidProblem) {
				t.Errorf("err = %v, want ErrInvalidProblem", err)
			}
		})
	}
}
