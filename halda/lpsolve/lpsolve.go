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
	lp := golp.NewLP(0, 2*m)
	lp.SetVerboseLevel(golp.NEUTRAL)
	if s.TimeoutSec > 0 {
		lp.SetTimeout(s.TimeoutSec)
	}
	obj := make([]float64, 2*m)
	sum := make([]golp.Entry, 0, 2*m)
	for i, v := range p.Vars {
		obj[i], obj[m+i] = v.CostW, v.CostW+v.CostN
		sum = append(sum, golp.Entry{Col: i, Val: 1}, golp.Entry{Col: m + i, Val: 1})
	}
	if err := lp.AddConstraintSparse(sum, golp.EQ, float64(p.W)); err != nil {
		return halda.LayerSolution{}, fmt.Errorf("lpsolve: add the window row: %w", err)
	}
	for i, v := range p.Vars {
		wMin, wMax := max(v.WMin, 0), min(v.WMax, p.W)
		cMin, cMax := max(v.CPUMin, 0), min(v.CPUMax, wMax)
		nMax := min(v.NMax, wMax)
		if cMin > cMax || nMax < 0 || wMin > wMax {
			return halda.LayerSolution{}, ErrInfeasible
		}
		w := []golp.Entry{{Col: i, Val: 1}, {Col: m + i, Val: 1}}
		if wMin > cMin {
			if err := lp.AddConstraintSparse(w, golp.GE, float64(wMin)); err != nil {
				return halda.LayerSolution{}, fmt.Errorf("lpsolve: add the window floor for var %d: %w", i, err)
			}
		}
		if wMax < cMax+nMax {
			if err := lp.AddConstraintSparse(w, golp.LE, float64(wMax)); err != nil {
				return halda.LayerSolution{}, fmt.Errorf("lpsolve: add the window cap for var %d: %w", i, err)
			}
		}
		lp.SetInt(i, true)
		lp.SetInt(m+i, true)
		lp.SetBounds(i, float64(cMin), float64(cMax))
		lp.SetBounds(m+i, 0, float64(nMax))
	}
	lp.SetObjFn(obj)
	if err := statusErr(lp.Solve()); err != nil {
		return halda.LayerSolution{}, err
	}
	x := lp.Variables()
	sol := halda.LayerSolution{W: make([]int, m), N: make([]int, m)}
	for i := range m {
		c, n := int(math.Round(x[i])), int(math.Round(x[m+i]))
		sol.W[i], sol.N[i] = c+n, n
	}
	// Recompute the objective from the integers: lp_solve's is within its
	// tolerances, and Halda compares objectives across k.
	sol.Objective = p.Objective(sol.W, sol.N)
	return sol, nil
}
