package lpsolve_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/halda"
	"homering/halda/lpsolve"
)

func TestSolveLayers(t *testing.T) {
	tests := []struct {
		name    string
		p       halda.LayerILP
		wantW   []int
		wantN   []int
		wantErr error
	}{{
		name: "cheaper device takes all it may",
		p: halda.LayerILP{W: 10, Vars: []halda.LayerVars{
			{CostW: 1, WMin: 1, WMax: 10, CPUMax: 10},
			{CostW: 2, WMin: 1, WMax: 10, CPUMax: 10},
		}},
		wantW: []int{9, 1}, wantN: []int{0, 0},
	}, {
		name: "GPU layers up to the VRAM bound, CPU floor on w-n",
		p: halda.LayerILP{W: 8, Vars: []halda.LayerVars{
			{CostW: 3, CostN: -2, WMin: 0, WMax: 8, NMax: 5, CPUMin: 2, CPUMax: 8},
			{CostW: 2, WMin: 1, WMax: 3, CPUMax: 8},
		}},
		wantW: []int{7, 1}, wantN: []int{5, 0}, // 3·7 − 2·5 + 2 = 13 beats 3·5 − 2·3 + 2·3 = 15
	}, {
		name: "bounds that cannot sum to W",
		p: halda.LayerILP{W: 10, Vars: []halda.LayerVars{
			{CostW: 1, WMin: 1, WMax: 3, CPUMax: 10},
			{CostW: 1, WMin: 1, WMax: 3, CPUMax: 10},
		}},
		wantErr: halda.ErrILPInfeasible,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sol, err := lpsolve.Solver{}.SolveLayers(tt.p)
			if tt.wantErr != nil {
				var se *lpsolve.StatusError
				if !errors.Is(err, tt.wantErr) || !errors.Is(err, lpsolve.ErrInfeasible) || !errors.As(err, &se) || se.Status != "INFEASIBLE" {
					t.Fatalf("err = %v, want %v as a StatusError", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([][]int{tt.wantW, tt.wantN}, [][]int{sol.W, sol.N}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !tt.p.Feasible(sol.W, sol.N) || sol.Objective != tt.p.Objective(sol.W, sol.N) {
				t.Errorf("solution %+v infeasible or objective wrong", sol)
			}
		})
	}
	if _, err := (lpsolve.Solver{}).SolveLayers(halda.LayerILP{W: 1}); !errors.Is(err, lpsolve.ErrFailed) {
		t.Errorf("empty program: %v", err)
	}
}
