package lpsolve

import (
	"errors"
	"fmt"
	"math"

	"github.com/draffensperger/golp"

	"homering/halda"
)

// Sentinels for lp_solve's statuses. Each error Solver returns wraps one of
// them; ErrInfeasible also wraps halda.ErrILPInfeasible so that Halda skips
// that k.
var (
	ErrInfeasible = fmt.Errorf("lpsolve: the program has no integer point: %w", halda.ErrILPInfeasible)
	ErrUnbounded  = errors.New("lpsolve: the program is unbounded")
	ErrNoMemory   = errors.New("lpsolve: out of memory")
	ErrTimeout    = errors.New("lpsolve: stopped at the time limit before proving optimality")
	ErrFailed     = errors.New("lpsolve: the solver failed")
)

// StatusError is a non-optimal lp_solve status.
type StatusError struct {
	Status string // lp_solve's name for it, e.g. "NUMFAILURE"
	Code   int    // lp_solve's number for it
	err    error
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%v (lp_solve status %s, %d)", e.err, e.Status, e.Code)
}

func (e *StatusError) Unwrap() error { return e.err }

// statusErr maps a lp_solve result to nil (optimal) or a typed error.
func statusErr(t golp.SolutionType) error {
	var base error
	switch t {
	case golp.OPTIMAL:
		return nil
	case golp.INFEASIBLE:
		base = ErrInfeasible
	case golp.UNBOUNDED:
		base = ErrUnbounded
	case golp.NOMEMORY:
		base = ErrNoMemory
	case golp.TIMEOUT, golp.SUBOPTIMAL, golp.USERABORT, golp.FEASFOUND, golp.NOFEASFOUND, golp.PROCBREAK:
		base = ErrTimeout
	default:
		base = ErrFailed
	}
	return &StatusError{Status: t.String(), Code: int(t), err: base}
}

// Solver solves halda's per-k ILPs with lp_solve. The zero value is ready;
// it holds no state, so one Solver may serve concurrent Solve calls.
type Solver struct {
	// TimeoutSec, when positive, stops lp_solve after that many seconds
	// (ErrTimeout). Halda's ILPs take milliseconds; this is a safety net.
	TimeoutSec int
}

var _ halda.Solver = Solver{}

// SolveLayers encodes the ILP in CPU and GPU layers per device instead of
// w and n: columns c_0..c_{M-1} (c_m = w_m − n_m) and n_0..n_{M-1}, so that
//
//	Σ_m (c_m + n_m) = W
//	WMin_m ≤ c_m + n_m ≤ WMax_m          (a row only where the bounds below do not imply it)
//	max(CPUMin_m, 0) ≤ c_m ≤ CPUMax_m,  0 ≤ n_m ≤ NMax_m   (column bounds)
//
// with objective Σ CostW·c + (CostW + CostN)·n. Every column has one 1 in
// the Σ row and one in its device's row: the matrix is the incidence matrix
// of a bipartite graph, totally unimodular, so with integer bounds the LP
// relaxation's vertices are integral and lp_solve's branch and bound ends at
// its root. The columns are still declared integer, so an answer is never
// fractional.
func (s Solver) SolveLayers(p halda.LayerILP) (halda.LayerSolution, error) {
	m := len(p.Vars)
	if m == 0 {
		return halda.LayerSolution{}, fmt.Errorf("lpsolve: the program has no devices: %w", ErrFailed)
	}
	// A column only where the variable can be non-zero: a CPU-only device
	// has no n column, a device whose layers must all be on its GPU no c
	// column. lp_solve's time grows with the columns.
	ds := make([]devCols, m)
	cols := 0
	for i, v := range p.Vars {
		d := devCols{wMin: max(v.WMin, 0), wMax: min(v.WMax, p.W), cCol: -1, nCol: -1}
		d.cMin, d.cMax = max(v.CPUMin, 0), min(v.CPUMax, d.wMax)
		d.nMax = min(v.NMax, d.wMax)
		if d.cMin > d.cMax || d.nMax < 0 || d.wMin > d.wMax {
			return halda.LayerSolution{}, ErrInfeasible
		}
		if d.cMax > 0 {
			d.cCol, cols = cols, cols+1
		}
		if d.nMax > 0 {
			d.nCol, cols = cols, cols+1
		}
		ds[i] = d
	}
	if cols == 0 {
		if p.W == 0 {
			return answer(p, nil, ds)
		}
		return halda.LayerSolution{}, ErrInfeasible
	}
	lp := golp.NewLP(0, cols)
	lp.SetVerboseLevel(golp.NEUTRAL)
	if s.TimeoutSec > 0 {
		lp.SetTimeout(s.TimeoutSec)
	}
	obj := make([]float64, cols)
	sum := make([]golp.Entry, 0, cols)
	for i, v := range p.Vars {
		d := ds[i]
		var w []golp.Entry
		if d.cCol >= 0 {
			obj[d.cCol] = v.CostW
			w = append(w, golp.Entry{Col: d.cCol, Val: 1})
		}
		if d.nCol >= 0 {
			obj[d.nCol] = v.CostW + v.CostN
			w = append(w, golp.Entry{Col: d.nCol, Val: 1})
		}
		sum = append(sum, w...)
		hi := max(d.cMax, 0) + max(d.nMax, 0)
		if d.wMin > d.cMin && len(w) > 0 {
			if err := lp.AddConstraintSparse(w, golp.GE, float64(d.wMin)); err != nil {
				return halda.LayerSolution{}, fmt.Errorf("lpsolve: add the window floor for var %d: %w", i, err)
			}
		} else if d.wMin > hi {
			return halda.LayerSolution{}, ErrInfeasible
		}
		if d.wMax < hi && len(w) > 0 {
			if err := lp.AddConstraintSparse(w, golp.LE, float64(d.wMax)); err != nil {
				return halda.LayerSolution{}, fmt.Errorf("lpsolve: add the window cap for var %d: %w", i, err)
			}
		}
		if d.cCol >= 0 {
			lp.SetInt(d.cCol, true)
			lp.SetBounds(d.cCol, float64(d.cMin), float64(d.cMax))
		}
		if d.nCol >= 0 {
			lp.SetInt(d.nCol, true)
			lp.SetBounds(d.nCol, 0, float64(d.nMax))
		}
	}
	if err := lp.AddConstraintSparse(sum, golp.EQ, float64(p.W)); err != nil {
		return halda.LayerSolution{}, fmt.Errorf("lpsolve: add the window row: %w", err)
	}
	lp.SetObjFn(obj)
	if err := statusErr(lp.Solve()); err != nil {
		return halda.LayerSolution{}, err
	}
	return answer(p, lp.Variables(), ds)
}

// devCols is one device's bounds and its columns (-1: none).
type devCols struct{ cMin, cMax, nMax, wMin, wMax, cCol, nCol int }

// answer reads the columns back into w and n.
func answer(p halda.LayerILP, x []float64, ds []devCols) (halda.LayerSolution, error) {
	m := len(p.Vars)
	sol := halda.LayerSolution{W: make([]int, m), N: make([]int, m)}
	for i, d := range ds {
		var c, n int
		if d.cCol >= 0 {
			c = int(math.Round(x[d.cCol]))
		}
		if d.nCol >= 0 {
			n = int(math.Round(x[d.nCol]))
		}
		sol.W[i], sol.N[i] = c+n, n
	}
	// Recompute the objective from the integers: lp_solve's is within its
	// tolerances, and Halda compares objectives across k.
	sol.Objective = p.Objective(sol.W, sol.N)
	return sol, nil
}
