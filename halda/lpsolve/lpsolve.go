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

// SolveLayers encodes the ILP as columns w_0..w_{M-1}, n_0..n_{M-1}, all
// integer, with the bounds as column bounds and the coupling rows as rows:
//
//	Σ w = W;  n_m − w_m ≤ 0;  CPUMin_m ≤ w_m − n_m ≤ CPUMax_m (only when tighter than the bounds).
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
	sum := make([]golp.Entry, m)
	for i, v := range p.Vars {
		obj[i], obj[m+i] = v.CostW, v.CostN
		sum[i] = golp.Entry{Col: i, Val: 1}
	}
	if err := lp.AddConstraintSparse(sum, golp.EQ, float64(p.W)); err != nil {
		return halda.LayerSolution{}, fmt.Errorf("lpsolve: add the window row: %w", err)
	}
	for i, v := range p.Vars {
		wMax := min(v.WMax, p.W)
		nMax := min(v.NMax, wMax)
		if v.WMin > wMax || nMax < 0 {
			return halda.LayerSolution{}, ErrInfeasible
		}
		if nMax > 0 {
			if err := lp.AddConstraintSparse([]golp.Entry{{Col: m + i, Val: 1}, {Col: i, Val: -1}}, golp.LE, 0); err != nil {
				return halda.LayerSolution{}, fmt.Errorf("lpsolve: add n ≤ w for var %d: %w", i, err)
			}
		}
		diff := []golp.Entry{{Col: i, Val: 1}, {Col: m + i, Val: -1}}
		if v.CPUMin > max(v.WMin-nMax, 0) {
			if err := lp.AddConstraintSparse(diff, golp.GE, float64(v.CPUMin)); err != nil {
				return halda.LayerSolution{}, fmt.Errorf("lpsolve: add the CPU-layer floor for var %d: %w", i, err)
			}
		}
		if v.CPUMax < wMax {
			if err := lp.AddConstraintSparse(diff, golp.LE, float64(v.CPUMax)); err != nil {
				return halda.LayerSolution{}, fmt.Errorf("lpsolve: add the CPU-layer cap for var %d: %w", i, err)
			}
		}
		lp.SetInt(i, true)
		lp.SetInt(m+i, true)
		lp.SetBounds(i, float64(max(v.WMin, 0)), float64(wMax))
		lp.SetBounds(m+i, 0, float64(nMax))
	}
	lp.SetObjFn(obj)
	if err := statusErr(lp.Solve()); err != nil {
		return halda.LayerSolution{}, err
	}
	x := lp.Variables()
	sol := halda.LayerSolution{W: make([]int, m), N: make([]int, m)}
	for i := range m {
		sol.W[i] = int(math.Round(x[i]))
		sol.N[i] = int(math.Round(x[m+i]))
	}
	// Recompute the objective from the integers: lp_solve's is within its
	// tolerances, and Halda compares objectives across k.
	sol.Objective = p.Objective(sol.W, sol.N)
	return sol, nil
}
