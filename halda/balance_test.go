package halda_test

import (
	"math"
	"slices"
	"testing"

	"homering/halda"
	"homering/halda/haldatest"
	"homering/halda/lpsolve"
)

// TestBalance: among plans within BalanceSlack of the optimum Halda picks
// the one whose devices' times are most even (package doc, "Balance").
func TestBalance(t *testing.T) {
	ms := 1e-3
	links := func(self string, to ...string) map[string]float64 {
		m := map[string]float64{}
		for _, o := range to {
			if o != self {
				m[o] = 1 * ms
			}
		}
		return m
	}
	slow := func(d halda.Device) halda.Device { // α = 40 ms per layer
		d.CPUFlops, d.CPUReadBytesPerSec = map[string]float64{"f16": 50e9}, 50e9
		return d
	}
	abc := []string{"a", "b", "c"}
	tests := []struct {
		name   string
		p      halda.Problem
		corner []int // an optimal split before balancing, for the slack
		want   []int // windows in ring order
	}{{
		// The rig's shape: the ILP's vertex was 28, 30, 2 (memory rows
		// filled in turn); the same time per token split 20, 20, 20.
		name: "three equal CPUs, the head with less room",
		p: halda.Problem{Model: handModel(60), Devices: []halda.Device{
			cpu("a", 28*gb+gb/2, 50e6, links("a", abc...)), cpu("b", 30*gb+gb/2, 50e6, links("b", abc...)), cpu("c", 30*gb+gb/2, 50e6, links("c", abc...))}},
		corner: []int{28, 30, 2},
		want:   []int{20, 20, 20},
	}, {
		// Moving a layer from a (20 ms) to b (40 ms) costs 20 ms: one move
		// stays within 2% of 58·20 + 2·40 + 2 = 1242 ms, a second does not.
		name: "a device twice as slow keeps almost Halda's split",
		p: halda.Problem{Model: handModel(60), Devices: []halda.Device{
			cpu("a", 58*gb+gb/2, 50e6, links("a", "b")), slow(cpu("b", 60*gb+gb/2, 50e6, links("b", "a")))}},
		corner: []int{58, 2},
		want:   []int{57, 3},
	}, {
		// a and b hold 56 of 60 layers, c has room for 10: balancing
		// stops at c's memory row rather than page (every device keeps
		// its case).
		name: "a device short of room stays within it",
		p: halda.Problem{Model: handModel(60), Devices: []halda.Device{
			cpu("a", 28*gb+gb/2, 50e6, links("a", abc...)), cpu("b", 28*gb+gb/2, 50e6, links("b", abc...)), cpu("c", 10*gb+gb/2, 50e6, links("c", abc...))}},
		corner: []int{28, 28, 4},
		want:   []int{25, 25, 10},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := halda.Solve(tt.p, lpsolve.Solver{})
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			byName := map[string]int{}
			for _, a := range pl.Ring {
				byName[a.Device] = a.W
				if a.Case != halda.M4 {
					t.Errorf("%s is in case %s, want M4 (balancing must not make it page)", a.Device, a.Case)
				}
			}
			for _, d := range tt.p.Devices {
				got = append(got, byName[d.Name])
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("windows %v, want %v", got, tt.want)
			}
			// The corner's time is the optimum's: balancing stays within
			// the slack of it.
			corner := pl
			corner.Ring = slices.Clone(pl.Ring)
			for i := range corner.Ring {
				for j, d := range tt.p.Devices {
					if d.Name == corner.Ring[i].Device {
						corner.Ring[i].W = tt.corner[j]
					}
				}
			}
			opt, err := halda.Rescore(tt.p, corner)
			if err != nil {
				t.Fatal(err)
			}
			if pl.PredictedMs > opt.PredictedMs*(1+halda.BalanceSlack)*(1+1e-12) {
				t.Errorf("balanced plan predicts %.3f ms, more than %.0f%% above the optimum's %.3f", pl.PredictedMs, 100*halda.BalanceSlack, opt.PredictedMs)
			}
		})
	}
}

// TestThrashFlip: on a problem where the case loop settles on the head
// thrashing (M3t, w = 2: 256.852 ms per token), the search also tries the
// head in M3 with one resident layer and the rest moved (86.763 ms); and
// balancing, which before moved the head across that line itself and
// landed below the optimum, stays at or above it.
func TestThrashFlip(t *testing.T) {
	p, err := haldatest.Problem("thrash-flip.json")
	if err != nil {
		t.Fatal(err)
	}
	opt, err := halda.SolveOptimum(p, lpsolve.Solver{})
	if err != nil {
		t.Fatal(err)
	}
	want := []row{{"d0", halda.M3, 1, 0}, {"d1", halda.M4, 3, 3}, {"d2", halda.M4, 3, 0}}
	if opt.K != 1 || !slices.Equal(rows(opt), want) || math.Abs(opt.PredictedMs-86.763) > 1e-3 {
		t.Errorf("optimum k=%d %v at %.3f ms, want k=1 %v at 86.763 ms", opt.K, rows(opt), opt.PredictedMs, want)
	}
	bal, err := halda.Solve(p, lpsolve.Solver{})
	if err != nil {
		t.Fatal(err)
	}
	if bal.PredictedMs < opt.PredictedMs*(1-1e-9) || bal.PredictedMs > opt.PredictedMs*(1+halda.BalanceSlack) {
		t.Errorf("balanced plan %v at %.3f ms, optimum %.3f ms", rows(bal), bal.PredictedMs, opt.PredictedMs)
	}
	checkBaselines(t, p, bal)
}
