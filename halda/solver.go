package halda

import "math"

// LayerILP is the per-k integer program of eqs. 6-10 after Halda has fixed k
// and the case of every device: minimise Σ_m CostW_m·w_m + CostN_m·n_m over
// integers subject to
//
//	Σ_m w_m = W                       (eq. 8)
//	WMin_m ≤ w_m ≤ WMax_m             (eq. 7 and the M1, M2, M4-macOS rows of eq. 9)
//	0 ≤ n_m ≤ min(w_m, NMax_m)        (eq. 7 and the VRAM rows of eq. 10)
//	CPUMin_m ≤ w_m − n_m ≤ CPUMax_m   (the M3, M5, M4-Linux/Windows rows of eq. 9, KV rows)
//
// Every memory row of the paper is a bound on w, n or w−n once k is fixed,
// and because w and n are integers Halda turns the paper's strict
// inequalities into exact integer bounds before building this (see the
// package doc), so a Solver needs no epsilon.
type LayerILP struct {
	W    int
	Vars []LayerVars
}

// LayerVars holds one device's objective coefficients and bounds.
type LayerVars struct {
	CostW, CostN   float64
	WMin, WMax     int
	NMax           int
	CPUMin, CPUMax int
}

// LayerSolution is an optimal point of a LayerILP.
type LayerSolution struct {
	W, N      []int
	Objective float64 // Σ CostW·w + CostN·n at (W, N)
}

// Solver solves a LayerILP to optimality. It returns an error wrapping
// ErrILPInfeasible when the program has no integer point, and another error
// when it could not decide. halda/lpsolve implements it with lp_solve.
type Solver interface {
	SolveLayers(LayerILP) (LayerSolution, error)
}

// Objective evaluates the ILP's objective at (w, n).
func (p LayerILP) Objective(w, n []int) float64 {
	var s float64
	for i, v := range p.Vars {
		s += v.CostW*float64(w[i]) + v.CostN*float64(n[i])
	}
	return s
}

// Feasible reports whether (w, n) satisfies every row of the ILP.
func (p LayerILP) Feasible(w, n []int) bool {
	if len(w) != len(p.Vars) || len(n) != len(p.Vars) {
		return false
	}
	sum := 0
	for i, v := range p.Vars {
		if w[i] < v.WMin || w[i] > v.WMax || n[i] < 0 || n[i] > v.NMax || n[i] > w[i] {
			return false
		}
		if c := w[i] - n[i]; c < v.CPUMin || c > v.CPUMax {
			return false
		}
		sum += w[i]
	}
	return sum == p.W
}

// triviallyInfeasible spots programs whose bounds already contradict each
// other, so Halda need not call the solver for them.
func (p LayerILP) triviallyInfeasible() bool {
	lo, hi := 0, 0
	for _, v := range p.Vars {
		if v.WMin > v.WMax || v.NMax < 0 || v.CPUMin > v.CPUMax || v.CPUMax < 0 {
			return true
		}
		// w ≥ w−n ≥ CPUMin and w ≤ NMax + CPUMax.
		wlo, whi := max(v.WMin, v.CPUMin), min(v.WMax, v.NMax+v.CPUMax)
		if wlo > whi {
			return true
		}
		lo += wlo
		hi += whi
	}
	return p.W < lo || p.W > hi
}

// lowerBound is a cheap bound below the ILP's optimum: every device holds at
// least max(WMin, CPUMin) layers and every layer costs at least its
// device's cheaper per-layer cost (CPU: CostW, GPU: CostW+CostN); the layers
// left over cost at least the cheapest layer anywhere.
func (p LayerILP) lowerBound() float64 {
	var lb float64
	cheapest := math.Inf(1)
	left := p.W
	for _, v := range p.Vars {
		c := v.CostW
		if v.NMax > 0 {
			c = min(c, v.CostW+v.CostN)
		}
		floor := max(v.WMin, v.CPUMin, 0)
		lb += c * float64(floor)
		left -= floor
		cheapest = min(cheapest, c)
	}
	if left > 0 {
		lb += cheapest * float64(left)
	}
	return lb
}
