package halda_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"homering/halda"
	"homering/halda/haldatest"
	"homering/halda/lpsolve"
)

// BenchmarkSolve times the whole solve (every k, the case loop, device
// selection, ring order) for an 80-layer model on clusters of 4-64 devices.
// bench/halda.sh prints the table with medians.
func BenchmarkSolve(b *testing.B) {
	m, err := haldatest.Model("llama3-70b-q4k.json")
	if err != nil {
		b.Fatal(err)
	}
	modelBytes := float64(80 * 512e6)
	for _, n := range []int{4, 8, 16, 32, 64} {
		p := halda.Problem{Devices: haldatest.Cluster(rand.New(rand.NewPCG(uint64(n), 7)), n, modelBytes), Model: m}
		for _, s := range []struct {
			name string
			s    halda.Solver
		}{{"lpsolve", lpsolve.Solver{}}} {
			b.Run(fmt.Sprintf("devices=%d/%s", n, s.name), func(b *testing.B) {
				var pl halda.Plan
				for b.Loop() {
					pl, err = halda.Solve(p, s.s)
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(pl.Stats.ILPs), "ilps")
				b.ReportMetric(float64(len(pl.Ring)), "ring")
			})
		}
	}
}
