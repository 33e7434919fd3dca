package haldatest

import (
	"fmt"
	"math"

	"homering/halda"
)

// Exhaustive solves a halda.LayerILP by enumeration: every composition of W
// into w_1..w_M within the bounds, and for each w_m every n_m in 0..w_m. Once
// w is fixed the objective and every row other than Σ w = W separate by
// device, so the best n of each device is chosen on its own; the optimum is
// exact. Ties keep the first point found (w in increasing lexicographic
// order), so the answer is deterministic. Meant for tiny programs (≤ 4
// devices, ≤ 16 layers): the work grows as W^(M-1).
type Exhaustive struct{}

var _ halda.Solver = Exhaustive{}

// SolveLayers implements halda.Solver.
func (Exhaustive) SolveLayers(p halda.LayerILP) (halda.LayerSolution, error) {
	m := len(p.Vars)
	// bestN[i][w] is device i's best n for window w and its cost.
	type pick struct {
		n    int
		cost float64
		ok   bool
	}
	table := make([][]pick, m)
	for i, v := range p.Vars {
		table[i] = make([]pick, p.W+1)
		for w := 0; w <= p.W; w++ {
			pk := pick{cost: math.Inf(1)}
			if w >= v.WMin && w <= v.WMax {
				for n := 0; n <= w && n <= v.NMax; n++ {
					if c := w - n; c < v.CPUMin || c > v.CPUMax {
						continue
					}
					if cost := v.CostW*float64(w) + v.CostN*float64(n); !pk.ok || cost < pk.cost {
						pk = pick{n: n, cost: cost, ok: true}
					}
				}
			}
			table[i][w] = pk
		}
	}
	best := math.Inf(1)
	var bw []int
	w := make([]int, m)
	var rec func(i, left int, acc float64)
	rec = func(i, left int, acc float64) {
		if i == m-1 {
			if pk := table[i][left]; pk.ok && acc+pk.cost < best {
				w[i] = left
				best = acc + pk.cost
				bw = append(bw[:0], w...)
			}
			return
		}
		for x := 0; x <= left; x++ {
			if pk := table[i][x]; pk.ok {
				w[i] = x
				rec(i+1, left-x, acc+pk.cost)
			}
		}
	}
	if m > 0 {
		rec(0, p.W, 0)
	}
	if bw == nil {
		return halda.LayerSolution{}, fmt.Errorf("haldatest: enumeration found no point: %w", halda.ErrILPInfeasible)
	}
	sol := halda.LayerSolution{W: bw, N: make([]int, m)}
	for i := range m {
		sol.N[i] = table[i][bw[i]].n
	}
	sol.Objective = p.Objective(sol.W, sol.N)
	return sol, nil
}
