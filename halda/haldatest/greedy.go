package haldatest

import (
	"container/heap"
	"fmt"
	"math"

	"homering/halda"
)

// Greedy solves a halda.LayerILP exactly in O(W log M): with n chosen best
// for each w, a device's cost is convex in w (CostW·w plus CostN times
// min(w−CPUMin, NMax) when GPU layers pay, or max(0, w−CPUMax) when they
// cost), and its feasible w form an interval; minimising a sum of convex
// functions under Σ w = W is done by starting every device at its smallest
// w and handing out the remaining layers one at a time to the cheapest
// marginal cost. The benchmark compares it with lp_solve to show what an
// exact special-purpose solver costs.
type Greedy struct{}

var _ halda.Solver = Greedy{}

type margin struct {
	dev  int
	cost float64
}

type margins []margin

func (h margins) Len() int { return len(h) }
func (h margins) Less(i, j int) bool {
	if h[i].cost != h[j].cost {
		return h[i].cost < h[j].cost
	}
	return h[i].dev < h[j].dev
}
func (h margins) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *margins) Push(x any)   { *h = append(*h, x.(margin)) }
func (h *margins) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// bestN is the best n for window w, and whether w is feasible at all.
func bestN(v halda.LayerVars, w int) (int, bool) {
	lo, hi := max(0, w-v.CPUMax), min(w, v.NMax, w-v.CPUMin)
	if w < v.WMin || w > v.WMax || lo > hi {
		return 0, false
	}
	if v.CostN < 0 {
		return hi, true
	}
	return lo, true
}

func devCost(v halda.LayerVars, w int) float64 {
	n, ok := bestN(v, w)
	if !ok {
		return math.Inf(1)
	}
	return v.CostW*float64(w) + v.CostN*float64(n)
}

// SolveLayers implements halda.Solver.
func (Greedy) SolveLayers(p halda.LayerILP) (halda.LayerSolution, error) {
	m := len(p.Vars)
	w := make([]int, m)
	hiW := make([]int, m)
	left := p.W
	h := make(margins, 0, m)
	for i, v := range p.Vars {
		lo := max(v.WMin, v.CPUMin, 0)
		hi := min(v.WMax, v.NMax+v.CPUMax, p.W)
		if _, ok := bestN(v, lo); !ok || lo > hi {
			return halda.LayerSolution{}, fmt.Errorf("haldatest: device %d has no feasible window: %w", i, halda.ErrILPInfeasible)
		}
		w[i], hiW[i] = lo, hi
		left -= lo
		if lo < hi {
			h = append(h, margin{i, devCost(v, lo+1) - devCost(v, lo)})
		}
	}
	if left < 0 {
		return halda.LayerSolution{}, fmt.Errorf("haldatest: the smallest windows exceed W: %w", halda.ErrILPInfeasible)
	}
	heap.Init(&h)
	for ; left > 0; left-- {
		if h.Len() == 0 {
			return halda.LayerSolution{}, fmt.Errorf("haldatest: the largest windows fall short of W: %w", halda.ErrILPInfeasible)
		}
		top := heap.Pop(&h).(margin)
		i := top.dev
		w[i]++
		if w[i] < hiW[i] {
			v := p.Vars[i]
			heap.Push(&h, margin{i, devCost(v, w[i]+1) - devCost(v, w[i])})
		}
	}
	sol := halda.LayerSolution{W: w, N: make([]int, m)}
	for i, v := range p.Vars {
		sol.N[i], _ = bestN(v, w[i])
	}
	sol.Objective = p.Objective(sol.W, sol.N)
	return sol, nil
}
