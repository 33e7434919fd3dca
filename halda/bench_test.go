package halda_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"homering/halda"
	"homering/halda/haldatest"
	"homering/halda/lpsolve"
)

// timed measures the time spent inside a Solver.
type timed struct {
	s   halda.Solver
	sum time.Duration
}

func (t *timed) SolveLayers(p halda.LayerILP) (halda.LayerSolution, error) {
	start := time.Now()
	sol, err := t.s.SolveLayers(p)
	t.sum += time.Since(start)
	return sol, err
}

// BenchmarkSolve times the whole solve (every k, the case loop, device
// selection, ring order) for an 80-layer model (Llama-3-70B Q4_K) on
// clusters of 4-64 devices, with lp_solve and, to show what the rest of
// Halda costs, with the exact greedy solver of haldatest. bench/halda.sh prints
// the table with medians.
func BenchmarkSolve(b *testing.B) {
	m, err := haldatest.Model("llama3-70b-q4k.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{4, 8, 16, 32, 64} {
		p := halda.Problem{Devices: haldatest.Cluster(rand.New(rand.NewPCG(uint64(n), 7)), n, 80*512e6), Model: m}
		for _, s := range []struct {
			name string
			s    halda.Solver
		}{{"lpsolve", lpsolve.Solver{}}, {"greedy", haldatest.Greedy{}}} {
			b.Run(fmt.Sprintf("devices=%d/solver=%s", n, s.name), func(b *testing.B) {
				var pl halda.Plan
				ts := &timed{s: s.s}
				for b.Loop() {
					pl, err = halda.Solve(p, ts)
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(pl.Stats.ILPs), "ilps")
				b.ReportMetric(float64(len(pl.Ring)), "ring")
				b.ReportMetric(float64(ts.sum.Nanoseconds())/float64(b.N)/1e6, "solver-ms/op")
			})
		}
	}
}
