package lpsolve_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"homering/halda"
	"homering/halda/lpsolve"
)

// BenchmarkSolveLayers times one ILP of M devices and W = 80 layers, the
// size Halda hands lp_solve for an 80-layer model.
func BenchmarkSolveLayers(b *testing.B) {
	for _, m := range []int{4, 16, 32, 64} {
		r := rand.New(rand.NewPCG(uint64(m), 1))
		p := halda.LayerILP{W: 80}
		for i := range m {
			v := halda.LayerVars{
				CostW: 0.01 + r.Float64()*0.1, CostN: -r.Float64() * 0.01,
				WMin: 1, WMax: 80, NMax: r.IntN(20), CPUMin: 0, CPUMax: 2 + r.IntN(10),
			}
			if i%2 == 1 { // half the devices have no GPU
				v.NMax, v.CostN = 0, 0
			}
			p.Vars = append(p.Vars, v)
		}
		p.Vars[0].CPUMax = 80 // always feasible
		b.Run(fmt.Sprintf("devices=%d", m), func(b *testing.B) {
			for b.Loop() {
				if _, err := (lpsolve.Solver{}).SolveLayers(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
