package haldatest

import (
	"fmt"
	"math"

	"homering/halda"
)

// DP solves a halda.LayerILP exactly by dynamic programming over devices:
// best[i][c] is the cheapest way for devices 0..i to hold c layers, each
// device's cost for a window w being its best n (the rows separate by
// device once w is fixed). O(M·W²) work, no cgo: the benchmark uses it to
// show what the solve costs without lp_solve's per-call overhead.
type DP struct{}

var _ halda.Solver = DP{}

// SolveLayers implements halda.Solver.
func (DP) SolveLayers(p halda.LayerILP) (halda.LayerSolution, error) {
	m, W := len(p.Vars), p.W
	inf := math.Inf(1)
	cost := make([][]float64, m) // cost[i][w], +Inf when infeasible
	bestN := make([][]int, m)
	for i, v := range p.Vars {
		cost[i] = make([]float64, W+1)
		bestN[i] = make([]int, W+1)
		for w := 0; w <= W; w++ {
			cost[i][w] = inf
			if w < v.WMin || w > v.WMax {
				continue
			}
			// The objective is linear in n: the best n is at an end of its
			// feasible interval.
			lo, hi := max(0, w-v.CPUMax), min(w, v.NMax, w-v.CPUMin)
			if lo > hi {
				continue
			}
			n := lo
			if v.CostN < 0 {
				n = hi
			}
			cost[i][w] = v.CostW*float64(w) + v.CostN*float64(n)
			bestN[i][w] = n
		}
	}
	prev := make([]float64, W+1)
	for c := range prev {
		prev[c] = inf
	}
	prev[0] = 0
	choice := make([][]int, m)
	for i := range m {
		cur := make([]float64, W+1)
		choice[i] = make([]int, W+1)
		for c := 0; c <= W; c++ {
			cur[c] = inf
			for w := 0; w <= c; w++ {
				if t := prev[c-w] + cost[i][w]; t < cur[c] {
					cur[c], choice[i][c] = t, w
				}
			}
		}
		prev = cur
	}
	if math.IsInf(prev[W], 1) {
		return halda.LayerSolution{}, fmt.Errorf("haldatest: no point: %w", halda.ErrILPInfeasible)
	}
	sol := halda.LayerSolution{W: make([]int, m), N: make([]int, m)}
	for i, c := m-1, W; i >= 0; i-- {
		w := choice[i][c]
		sol.W[i], sol.N[i] = w, bestN[i][w]
		c -= w
	}
	sol.Objective = p.Objective(sol.W, sol.N)
	return sol, nil
}
