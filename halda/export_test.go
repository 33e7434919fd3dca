package halda

// CheckConsistency re-solves p's plan search and, for every ILP Halda
// builds, checks that the ILP's objective plus Halda's constant equals the
// full model's score of the same point: the case form (eq. A.3 with α, β,
// ξ, κ) and the max form (eqs. 11-19) agree wherever the cases hold. It
// returns the number of points checked and the largest relative gap.
func CheckConsistency(p Problem, s Solver) (int, float64, error) {
	q, err := prepare(p)
	if err != nil {
		return 0, 0, err
	}
	set := []int{0}
	for i := 1; i < len(q.devs) && len(set) <= q.L; i++ {
		if q.noRoom(i) == "" {
			set = append(set, i)
		}
	}
	ring, rs := q.order(set)
	f := &fixedPoint{q: q, ring: ring, ringSec: rs, ks: q.validK(len(ring))}
	n, worst := 0, 0.0
	starts := [][]Case{f.uniform(false), f.uniform(true), f.assign(1, q.memShare(ring, q.L), make([]int, len(ring)), nil)}
	if q.isMoE() {
		starts = append(starts, f.thrashing())
	}
	for _, cs := range starts {
		for _, k := range f.ks {
			ilp, konst := f.build(cs, k)
			if ilp.triviallyInfeasible() {
				continue
			}
			sol, err := s.SolveLayers(ilp)
			if err != nil {
				continue
			}
			_, t := q.evalRing(ring, k, sol.W, sol.N)
			got := sol.Objective + konst
			gap := (got - t) / max(t, 1e-12)
			if gap < 0 {
				gap = -gap
			}
			worst = max(worst, gap)
			n++
		}
	}
	return n, worst, nil
}

// PaperLoopForTest runs only Algorithm 1 as the paper writes it (the
// memory-proportional start, the case loop and the GPU-headroom step) on all
// devices, and returns the devices the headroom step forced into M4, in the
// order forced, with the best plan the loop found.
func PaperLoopForTest(p Problem, s Solver) ([]string, Plan, error) {
	q, err := prepare(p)
	if err != nil {
		return nil, Plan{}, err
	}
	set := make([]int, len(q.devs))
	for i := range set {
		set[i] = i
	}
	ring, rs := q.order(set)
	st := &Stats{}
	f := &fixedPoint{q: q, ring: ring, ringSec: rs, ks: q.validK(len(ring)), s: s, st: st}
	f.forceLog = []int{}
	if err := f.run(f.assign(1, q.memShare(ring, q.L), make([]int, len(ring)), nil), nil); err != nil {
		return nil, Plan{}, err
	}
	if f.best == nil {
		return nil, Plan{}, q.infeasible(set)
	}
	var forced []string
	for _, p := range f.forceLog {
		forced = append(forced, q.devs[ring[p]].Name)
	}
	return forced, q.plan(f.best, nil, *st), nil
}

// SolveOptimum is Solve without balancing: the plan the search found.
func SolveOptimum(p Problem, s Solver) (Plan, error) { return solve(p, s, false) }
