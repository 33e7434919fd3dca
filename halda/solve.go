package halda

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// cand is a scored assignment over one ring.
type cand struct {
	ring  []int // device indices, head first
	k     int
	w, n  []int // per ring position
	cost  float64
	cases []Case
	force []bool // devices forced into M4 when this was found
}

// Solve runs Halda (000/001 §3.3, Algorithm 1, with device selection) and
// returns the plan with the lowest predicted time per token. The Solver
// answers the per-k ILPs. With Problem.Streams > 1 it also decides how
// many conversations the plan admits (package doc, "Streams"). Errors wrap
// ErrInvalidProblem, ErrNoFeasiblePlan, ErrNoSolver, or the Solver's own
// failure.
func Solve(p Problem, s Solver) (Plan, error) { return solve(p, s, true) }

// solve is Solve; without balance it returns the search's optimum as it
// came from the ILPs (tests compare it with the baselines and enumeration).
func solve(p Problem, s Solver, balance bool) (Plan, error) {
	if s == nil {
		return Plan{}, ErrNoSolver
	}
	want := p.Streams
	if want < 0 || want > MaxStreams {
		_, err := prepare(p) // the invalid-problem error
		return Plan{}, err
	}
	pick := func(opt, bal Plan) Plan {
		if balance {
			return bal
		}
		return opt
	}
	p.Streams = 1
	one, oneBal, err := solveStreams(p, s)
	if err != nil || want <= 1 {
		return pick(one, oneBal), err
	}
	// The largest count whose plan stays within StreamSlowdown of one
	// conversation's: all that were asked for first (memory to spare, the
	// common case, costs one more solve), then a bisection, as more KV
	// only tightens every row (the best time does not fall with streams).
	// The counts are compared on the optima, before balancing: balance
	// spends its slack the same way whatever the count.
	st := one.Stats
	try := func(n int) (Plan, bool, error) {
		p.Streams = n
		pl, bal, err := solveStreams(p, s)
		var nf *NoFeasiblePlanError
		if errors.As(err, &nf) {
			return Plan{}, false, nil
		}
		if err != nil {
			return Plan{}, false, err
		}
		st = st.add(pl.Stats)
		return pick(pl, bal), pl.PredictedMs <= one.PredictedMs*StreamSlowdown, nil
	}
	best := pick(one, oneBal)
	pl, ok, err := try(want)
	if err != nil {
		return Plan{}, err
	}
	if ok {
		best = pl
	} else {
		lo, hi := 1, want-1 // lo admits; is hi's plan ok?
		for lo < hi {
			mid := (lo + hi + 1) / 2
			pl, ok, err := try(mid)
			if err != nil {
				return Plan{}, err
			}
			if ok {
				lo, best = mid, pl
			} else {
				hi = mid - 1
			}
		}
	}
	best.Stats = st
	return best, nil
}

// add sums two searches' work.
func (a Stats) add(b Stats) Stats {
	return Stats{ILPs: a.ILPs + b.ILPs, Pruned: a.Pruned + b.Pruned, Iterations: a.Iterations + b.Iterations, Subsets: a.Subsets + b.Subsets}
}

// solveStreams is Solve for exactly p.Streams conversations (≥ 1): the
// search's optimum and the same plan balanced (package doc, "Balance").
func solveStreams(p Problem, s Solver) (Plan, Plan, error) {
	q, err := prepare(p)
	if err != nil {
		return Plan{}, Plan{}, err
	}
	var st Stats
	active := make([]int, len(q.devs))
	for i := range active {
		active[i] = i
	}
	var dropped []Dropped
	// A ring needs one layer per non-head device: keep the fastest L.
	workers := q.L // layers per round at k = 1, one per worker
	if q.HeadHoldsLayers {
		workers = q.L - 1
	}
	if len(active)-1 > workers {
		rest := slices.Clone(active[1:])
		sort.SliceStable(rest, func(a, b int) bool { return q.layerSec(rest[a]) < q.layerSec(rest[b]) })
		for _, i := range rest[workers:] {
			dropped = append(dropped, q.drop(i,
				fmt.Sprintf("the model has only %d layers for %d devices; this device is among the slowest", q.L, len(active))))
		}
		active = append([]int{0}, rest[:workers]...)
		sort.Ints(active)
	}
	// A device that cannot hold even one layer would make every ILP
	// infeasible (w ≥ 1): leave it out before solving.
	active = slices.DeleteFunc(active, func(i int) bool {
		if i == 0 {
			return false
		}
		if why := q.noRoom(i); why != "" {
			dropped = append(dropped, q.drop(i, why))
			return true
		}
		return false
	})
	best, err := q.solveSubset(active, s, &st, nil)
	if err != nil {
		return Plan{}, Plan{}, err
	}
	if best == nil {
		return Plan{}, Plan{}, q.infeasible(active)
	}
	if !p.KeepAllDevices {
		best, active, dropped, err = q.selectDevices(best, active, dropped, s, &st)
		if err != nil {
			return Plan{}, Plan{}, err
		}
		// A small model may run fastest on the head alone, with no hop at
		// all (001 §3.3: Halda "reduces prima.cpp to llama.cpp"); the
		// one-layer rule cannot find that when the head held no layers.
		if len(active) > 1 {
			solo, err := q.solveSubset(active[:1], s, &st, nil)
			if err != nil {
				return Plan{}, Plan{}, err
			}
			if solo != nil && solo.cost < best.cost {
				for _, i := range active[1:] {
					dropped = append(dropped, q.drop(i, fmt.Sprintf(
						"the head alone predicts %.1f ms per token, faster than %.1f ms with a ring", solo.cost*1e3, best.cost*1e3)))
				}
				best = solo
			}
		}
	}
	return q.plan(best, dropped, st), q.plan(q.balance(best), dropped, st), nil
}

// noRoom explains why device i (not the head) cannot hold one layer for one
// round under any case, or returns "".
func (q *prob) noRoom(i int) string {
	x := &q.devs[i]
	m := q.Model
	capB := x.ramCap()
	f := &fixedPoint{q: q, ring: []int{i}}
	g := 0
	if x.gpu != NoGPU && f.gpuCap(0, 1) >= 1 {
		g = 1
	}
	var hard int64
	if x.kind == kindMetal {
		hard = q.kvL + m.CPUBufferBytes + m.GPUBufferBytes
	} else {
		hard = int64(1-g)*q.kvL + m.CPUBufferBytes
	}
	if hard > capB {
		return fmt.Sprintf("it has %.2f GiB of memory, less than one layer's KV cache and the compute buffers (%.2f GiB)", gib(capB), gib(hard))
	}
	// The layer must fit (M4), or the device must page it.
	need := q.need(x, false, 1, g)
	if need > capB && x.slowDsk {
		return fmt.Sprintf("it has %.2f GiB of memory, less than one layer needs (%.2f GiB), and its disk is too slow to page from", gib(capB), gib(need))
	}
	return ""
}

// layerSec is a device's best time for one layer (CPU or GPU), used to rank
// devices when there are more devices than layers.
func (q *prob) layerSec(i int) float64 {
	x := &q.devs[i]
	if x.gpu != NoGPU && x.beta < 0 {
		return x.alpha + x.beta
	}
	return x.alpha
}

// maxSingleDrops bounds the one-at-a-time drops device selection tries:
// each is a whole solve, and with many one-layer devices the all-at-once
// drop is the one that matters (001 A.19.2).
const maxSingleDrops = 3

// maxForceTries bounds how many pagers forcePagers and flipThrash try per
// round, largest disk time first: each try is a run of the case loop.
const maxForceTries = 3

// selectDevices is 001 §3.3 "Device selection": a device whose best share is
// one layer (w = 1; the papers say one CPU layer, but a device holding one
// GPU layer costs a hop per round just the same) is dropped when the plan
// without it is faster, and the rest re-solved, until no such device is left
// or dropping no longer helps. The head is never dropped: it owns input and
// output.
func (q *prob) selectDevices(best *cand, active []int, dropped []Dropped, s Solver, st *Stats) (*cand, []int, []Dropped, error) {
	for range len(q.devs) {
		var weak []int
		for p, i := range best.ring {
			if p > 0 && best.w[p] == 1 {
				weak = append(weak, i)
			}
		}
		if len(weak) == 0 {
			break
		}
		// All weak devices at once first (as the paper drops them); when
		// that loses (a weak device can be a needed memory helper), the
		// costlier half of them, then a quarter, … down to the single
		// costliest; with few weak devices, each alone. O(log) solves.
		costs, _ := q.evalRing(best.ring, best.k, best.w, best.n)
		pos := map[int]int{}
		for p, i := range best.ring {
			pos[i] = p
		}
		sort.SliceStable(weak, func(a, b int) bool { return costs[pos[weak[a]]].total() > costs[pos[weak[b]]].total() })
		tries := [][]int{weak}
		for h := len(weak) / 2; h >= 1; h /= 2 {
			tries = append(tries, weak[:h])
		}
		if len(weak) <= maxSingleDrops {
			for _, i := range weak[1:] {
				tries = append(tries, []int{i})
			}
		}
		var win *cand
		var winSet, winDrop []int
		for _, drop := range tries {
			if win != nil {
				break // the first improvement is taken; the loop re-checks
			}
			set := slices.DeleteFunc(slices.Clone(active), func(i int) bool { return slices.Contains(drop, i) })
			c, err := q.solveSubset(set, s, st, best)
			if err != nil {
				return nil, nil, nil, err
			}
			if c != nil && c.cost < best.cost && (win == nil || c.cost < win.cost) {
				win, winSet, winDrop = c, set, drop
			}
		}
		if win == nil {
			break
		}
		for _, i := range winDrop {
			dropped = append(dropped, q.drop(i, fmt.Sprintf(
				"its best share was one layer; without it the plan predicts %.1f ms per token instead of %.1f ms",
				win.cost*1e3, best.cost*1e3)))
		}
		best, active = win, winSet
	}
	return best, active, dropped, nil
}

// validK lists the k (rounds) to try for a ring: the divisors of L whose
// window W = L/k has room for one layer per non-head device (Assumption 1:
// every round is full; see the package doc for why partial rounds are not
// considered).
func (q *prob) validK(ringLen int) []int {
	var ks []int
	need := ringLen - 1 // layers per round: one per worker, the head may hold none
	if q.HeadHoldsLayers {
		need = ringLen
	}
	for k := 1; k <= q.L; k++ {
		if q.Rounds > 0 && k != q.Rounds {
			continue
		}
		if q.L%k == 0 && q.L/k >= need && q.L/k >= 1 {
			ks = append(ks, k)
		}
	}
	return ks
}

// solveSubset runs Algorithm 1 on one set of devices. It returns nil (and no
// error) when no feasible plan exists for the set. from, when not nil, is
// the plan of a larger set this one was cut from (device selection): its
// devices' cases are the first start, and the robustness starts are skipped
// (they already ran on the larger set; a subset is only taken if it wins).
func (q *prob) solveSubset(set []int, s Solver, st *Stats, from *cand) (*cand, error) {
	st.Subsets++
	ring, ringSec := q.order(set)
	ks := q.validK(len(ring))
	if len(ks) == 0 {
		return nil, nil
	}
	f := &fixedPoint{q: q, ring: ring, ringSec: ringSec, ks: ks, s: s, st: st}
	if from != nil {
		at := map[int]int{}
		for p, i := range from.ring {
			at[i] = p
		}
		w, n := make([]int, len(ring)), make([]int, len(ring))
		for p, i := range ring {
			w[p], n[p] = from.w[at[i]], from.n[at[i]]
		}
		if err := f.run(f.assign(from.k, w, n, nil), nil); err != nil {
			return nil, err
		}
	}
	// Algorithm 1 line 1: windows in proportion to memory, n = 0, k = 1.
	w0 := q.memShare(ring, q.L)
	if err := f.run(f.assign(1, w0, make([]int, len(ring)), nil), nil); err != nil {
		return nil, err
	}
	if from != nil {
		return f.best, f.improve()
	}
	// The loop can stall on an assignment whose ILPs are all infeasible, or
	// settle in a poor fixed point (001 §3.3 concedes the assignment is a
	// heuristic). Two more starts, all devices fitting and all fast-disk
	// devices paging, make Halda robust; each is cheap.
	starts := [][]Case{f.uniform(false), f.uniform(true)}
	if q.isMoE() {
		// A MoE hot row grows with k, so no k makes room for it: from all
		// paging devices' overflow cases the loop may see only infeasible
		// ILPs. All of them re-reading what a token reads is a start too.
		starts = append(starts, f.thrashing())
	}
	for _, start := range starts {
		if err := f.run(start, nil); err != nil {
			return nil, err
		}
	}
	// And from the cases of the two heuristic splits (MemSched, PerfSched)
	// at their best k: the ILP then contains their points, so Halda is
	// never worse than either.
	for _, split := range []func(*prob, []int, int) ([]int, []int){(*prob).memSplit, (*prob).perfSplit} {
		if c := q.bestSplit(ring, split); c != nil {
			if err := f.run(f.assign(c.k, c.w, c.n, nil), nil); err != nil {
				return nil, err
			}
		}
	}
	if err := f.improve(); err != nil {
		return nil, err
	}
	return f.best, nil
}

// improve runs the two moves out of the case loop's fixed point,
// forcePagers and flipThrash, until neither improves the best plan.
func (f *fixedPoint) improve() error {
	for f.best != nil {
		b := f.best
		if err := f.forcePagers(); err != nil {
			return err
		}
		if err := f.flipThrash(); err != nil {
			return err
		}
		if f.best == b {
			return nil
		}
	}
	return nil
}

// flipThrash tries pagers of the best plan in their other paging variant
// (M3 and M3t, M1 and M1t, M5 and M5t), largest disk time first, and runs
// the loop from there, taking the first improvement and repeating. Line 6
// gives a pager the variant its window in the best plan implies, so the
// loop never tries a thrashing device with a window small enough to stay
// resident (its layers moved elsewhere), or the reverse: on the 800 random
// problems of the enumeration tests this found a better optimum for 35
// (up to 85% faster; one 257 → 87 ms). Each improvement lowers the best
// cost, so it ends.
func (f *fixedPoint) flipThrash() error {
	q := f.q
	for f.best != nil {
		b := f.best
		cases := f.assign(b.k, b.w, b.n, b.force)
		costs, _ := q.evalRing(b.ring, b.k, b.w, b.n)
		var flips []int
		for p := range b.ring {
			if other(q.devs[b.ring[p]].kind, cases[p]) != cases[p] {
				flips = append(flips, p)
			}
		}
		sort.SliceStable(flips, func(i, j int) bool { return costs[flips[i]].disk > costs[flips[j]].disk })
		improved, err := f.firstImprovement(flips, func(p int) error {
			cs := slices.Clone(cases)
			cs[p] = other(q.devs[b.ring[p]].kind, cs[p])
			return f.run(cs, b.force)
		})
		if err != nil || !improved {
			return err
		}
	}
	return nil
}

// firstImprovement runs try on the first maxForceTries of positions in
// order (each a run of the case loop) until one improves the best plan:
// the shared step of forcePagers and flipThrash.
func (f *fixedPoint) firstImprovement(positions []int, try func(p int) error) (bool, error) {
	b := f.best
	for _, p := range positions[:min(len(positions), maxForceTries)] {
		if err := try(p); err != nil {
			return false, err
		}
		if f.best != b {
			return true, nil
		}
	}
	return false, nil
}

// other is a pager's other paging variant (M3 for M3t and back); M4 and
// Metal's M2 have none and are returned as they are.
func other(k memKind, c Case) Case {
	switch c {
	case overloadCase(k):
		return thrashCase(k)
	case thrashCase(k):
		return overloadCase(k)
	}
	return c
}

// fixedPoint is the state of Algorithm 1 for one ring.
type fixedPoint struct {
	q       *prob
	ring    []int
	ringSec float64
	ks      []int
	s       Solver
	st      *Stats
	best    *cand
	tried   map[string]bool // case assignments already solved (any start)
	// forceLog, when not nil, records the ring positions the headroom step
	// forces, in order (tests).
	forceLog []int
}

func casesKey(cs []Case, force []bool) string {
	b := make([]byte, 0, 4*len(cs))
	for i, c := range cs {
		b = append(b, c...)
		if force != nil && force[i] {
			b = append(b, 'f')
		}
		b = append(b, ' ')
	}
	return string(b)
}

// Paging with a window too large to stay resident: the window evicts its
// own first layers before they run, so every CPU layer is re-read per token
// (the prefetch-release effect, 000 A.1). Costly, but on a fast disk it can
// still beat leaving a small device out. Internal to the search; a plan
// reports these devices as M1, M3 or M5.
const (
	m1Thrash Case = "M1t"
	m3Thrash Case = "M3t"
	m5Thrash Case = "M5t"
)

func thrashCase(k memKind) Case {
	switch k {
	case kindMacNoMetal:
		return m1Thrash
	case kindWindows:
		return m5Thrash
	case kindMetal:
		return M2 // Metal re-reads everything when short anyway
	}
	return m3Thrash
}

// thrashing is the assignment with every fast-disk device re-reading all
// its CPU layers' reads (M1t, M3t, M5t; Metal M2).
func (f *fixedPoint) thrashing() []Case {
	cs := f.uniform(false)
	for p, i := range f.ring {
		if x := &f.q.devs[i]; !x.slowDsk {
			cs[p] = thrashCase(x.kind)
		}
	}
	return cs
}

// uniform is the assignment with every device fitting (M4) or every device
// with a fast enough disk paging.
func (f *fixedPoint) uniform(page bool) []Case {
	cs := make([]Case, len(f.ring))
	for p, i := range f.ring {
		x := &f.q.devs[i]
		cs[p] = M4
		if page && !x.slowDsk {
			cs[p] = overloadCase(x.kind)
		}
	}
	return cs
}

// assign is Algorithm 1 line 6: a device's case follows from whether its
// RAM row is exceeded at (k, w, n); forced and slow-disk devices stay in M4.
func (f *fixedPoint) assign(k int, w, n []int, force []bool) []Case {
	cs := make([]Case, len(f.ring))
	for p, i := range f.ring {
		x := &f.q.devs[i]
		cs[p] = M4
		if x.slowDsk || (force != nil && force[p]) {
			continue
		}
		if f.q.need(x, p == 0, k*w[p], k*n[p]) > x.ramCap() {
			cs[p] = overloadCase(x.kind)
			if !f.q.hotFits(x, p == 0, k, w[p], n[p]) {
				cs[p] = thrashCase(x.kind)
			}
		}
	}
	return cs
}

// run iterates Algorithm 1 from a first case assignment until the
// assignment repeats or the iteration cap is hit, keeping the best feasible
// plan seen in f.best.
func (f *fixedPoint) run(cases []Case, force []bool) error {
	q := f.q
	if f.tried == nil {
		f.tried = map[string]bool{}
	}
	if force == nil {
		force = make([]bool, len(f.ring))
	} else {
		force = slices.Clone(force)
	}
	for range q.maxIt {
		cases = f.repair(cases, force)
		key := casesKey(cases, force)
		if f.tried[key] {
			return nil // a fixed point, or an assignment another start solved
		}
		f.tried[key] = true
		f.st.Iterations++
		var iter *cand
		for _, k := range f.ks {
			cutoff := math.Inf(1)
			if iter != nil {
				cutoff = iter.cost
			}
			if f.best != nil {
				cutoff = min(cutoff, f.best.cost)
			}
			c, err := f.solveK(cases, k, cutoff)
			if err != nil {
				return err
			}
			if c != nil && (iter == nil || c.cost < iter.cost) {
				iter = c
				iter.force = slices.Clone(force)
			}
		}
		if iter == nil {
			return nil // nothing feasible under this assignment: no w to move to
		}
		if f.best == nil || iter.cost < f.best.cost {
			f.best = iter
		}
		// Lines 13-15: a GPU with free VRAM while a device pages means the
		// sets were initialised badly; force the slowest-disk pager into M4.
		if ms := f.headroom(iter, force); ms >= 0 {
			force[ms] = true
			if f.forceLog != nil {
				f.forceLog = append(f.forceLog, ms)
			}
			cases = slices.Clone(cases)
			cases[ms] = M4
			continue
		}
		// Line 16: continue from the best plan so far.
		b := f.best
		cases = f.assign(b.k, b.w, b.n, force)
	}
	return nil
}

// forcePagers extends the headroom step (Algorithm 1 line 14) beyond its
// free-VRAM condition: while the best plan has devices paging from disk,
// force one into M4, the one losing most time to its disk first, and run
// the loop again from there; keep going while that improves the plan. The
// case loop alone cannot leave an assignment whose overload rows hold a
// device above its memory (e.g. a Metal head re-reading all its weights
// when other devices could page far faster): this is the move out of it.
// Each improvement forces one more device, so there are at most M rounds.
func (f *fixedPoint) forcePagers() error {
	q := f.q
	for f.best != nil {
		b := f.best
		costs, _ := q.evalRing(b.ring, b.k, b.w, b.n)
		var pagers []int
		for p := range b.ring {
			if b.cases[p] != M4 && !b.force[p] {
				pagers = append(pagers, p)
			}
		}
		sort.SliceStable(pagers, func(i, j int) bool { return costs[pagers[i]].disk > costs[pagers[j]].disk })
		improved, err := f.firstImprovement(pagers, func(p int) error {
			force := slices.Clone(b.force)
			force[p] = true
			return f.run(f.assign(b.k, b.w, b.n, force), force)
		})
		if err != nil || !improved {
			return err
		}
	}
	return nil
}

// headroom returns the ring position to force into M4 (Algorithm 1 line 14)
// or -1.
func (f *fixedPoint) headroom(c *cand, force []bool) int {
	q := f.q
	free := false
	for p, i := range c.ring {
		x := &q.devs[i]
		if x.gpu != NoGPU && c.n[p] < f.gpuCap(p, c.k) {
			free = true
			break
		}
	}
	if !free {
		return -1
	}
	ms, slowest := -1, math.Inf(1)
	for p, i := range c.ring {
		x := &q.devs[i]
		if c.cases[p] != M4 && !force[p] && x.disk < slowest {
			ms, slowest = p, x.disk
		}
	}
	return ms
}

// gpuCap is the VRAM row (eqs. 34-35) as a bound on n at k rounds.
func (f *fixedPoint) gpuCap(p, k int) int {
	q := f.q
	x := &q.devs[f.ring[p]]
	den := int64(k) * q.bp
	cg := q.Model.GPUBufferBytes
	var v int64
	switch {
	case x.gpu == CUDA:
		v = floorDiv(x.dCUDA-cg, den)
	case x.kind == kindMetal:
		v = floorDiv(x.dMetal-cg-boolBytes(p == 0, q.Model.OutputBytes), den)
	}
	return clampInt(max(v, 0))
}

// build is the ILP of eqs. 6-10 for fixed k and cases, with its constant
// (κ, the per-window copies and the ring's link times) returned apart.
func (f *fixedPoint) build(cases []Case, k int) (LayerILP, float64) {
	q := f.q
	ilp := LayerILP{W: q.L / k, Vars: make([]LayerVars, len(f.ring))}
	head := &q.devs[f.ring[0]]
	konst := head.outSec + q.rowSec + float64(k)*f.ringSec
	for p := range f.ring {
		v, c := f.vars(p, cases[p], k)
		ilp.Vars[p] = v
		konst += c
	}
	return ilp, konst
}

// vars is one device's part of the ILP: its coefficients and bounds in case
// cs at k rounds, and its share of the constant.
func (f *fixedPoint) vars(p int, cs Case, k int) (LayerVars, float64) {
	q := f.q
	m := q.Model
	W := q.L / k
	den := int64(k) * q.bp
	x := &q.devs[f.ring[p]]
	isHead := p == 0
	v := LayerVars{WMin: 1, WMax: W, NMax: f.gpuCap(p, k), CPUMin: 0, CPUMax: W}
	if isHead && !q.HeadHoldsLayers {
		v.WMin = 0 // the head may only do input and output (package doc)
	}
	konst := float64(k) * x.copies
	capB, cio := x.ramCap(), q.cio(x, isHead)
	// Non-evictable memory (Homering's rows, package doc): the KV cache
	// and buffers must fit, paging or not.
	if x.kind == kindMetal {
		v.WMax = min(v.WMax, q.kvBound(capB-m.CPUBufferBytes-m.GPUBufferBytes, k))
	} else {
		v.CPUMax = min(v.CPUMax, q.kvBound(capB-m.CPUBufferBytes, k))
	}
	bp, b := float64(q.bp), float64(q.b)
	// MoE (package doc): the overflow is re-read at ρ, a thrashing window
	// re-reads what a token reads (r), the window rows hold the hot set
	// (h'). A dense model has ρ = 1, r = b, h' = b'.
	over, r, rho := q.rho*bp, x.readB, q.rho
	hot := q.hotMax(x, isHead, k)
	// A MoE device thrashes only when it also pages (the dense window row
	// implies it; the MoE rows can fail with everything resident).
	overMin := 0
	if q.isMoE() {
		overMin = clampInt(floorDiv(capB-cio, den) + 1)
	}
	a, bn := x.alpha, x.beta
	switch cs {
	case M1: // eq. 27, and one window must fit (prefetch-release, package doc)
		a += over / x.disk
		v.WMin = max(v.WMin, clampInt(floorDiv(capB-cio, den)+1))
		v.WMax = min(v.WMax, clampInt(hot))
		konst += rho * float64(cio-capB) / x.disk
	case M2: // eq. 28; the whole weights are re-read
		a += b / x.disk
		v.WMin = max(v.WMin, clampInt(floorDiv(capB-cio-m.GPUBufferBytes, den)+1))
		konst += float64(boolBytes(isHead, q.bio)) / x.disk
	case m1Thrash: // every layer re-read; the window does not fit
		a += r / x.disk
		v.WMin = max(v.WMin, clampInt(hot+1), overMin)
		konst += float64(boolBytes(isHead, q.bio)) / x.disk
	case m3Thrash, m5Thrash:
		a += r / x.disk
		bn -= r / x.disk
		v.CPUMin = max(v.CPUMin, clampInt(hot+1), overMin)
		konst += float64(boolBytes(isHead, q.bio)) / x.disk
	case M3, M5: // eq. 29 and the window row; a GPU layer also saves its re-read
		a += over / x.disk
		bn -= over / x.disk
		v.CPUMin = max(v.CPUMin, clampInt(floorDiv(capB-cio, den)+1))
		v.CPUMax = min(v.CPUMax, clampInt(hot))
		konst += rho * float64(cio-capB) / x.disk
	default: // M4, eqs. 30-32 (≤: see the package doc)
		switch x.kind {
		case kindMacNoMetal:
			v.WMax = min(v.WMax, clampInt(floorDiv(capB-cio, den)))
		case kindMetal:
			v.WMax = min(v.WMax, clampInt(floorDiv(capB-cio-m.GPUBufferBytes, den)))
		default:
			v.CPUMax = min(v.CPUMax, clampInt(floorDiv(capB-cio, den)))
		}
	}
	v.CostW, v.CostN = float64(k)*a, float64(k)*bn
	if x.gpu == NoGPU {
		v.NMax, v.CostN = 0, 0
	}
	return v, konst
}

func (v LayerVars) feasibleAlone() bool {
	if v.WMin > v.WMax || v.NMax < 0 || v.CPUMin > v.CPUMax || v.CPUMax < 0 {
		return false
	}
	return max(v.WMin, v.CPUMin) <= min(v.WMax, v.NMax+v.CPUMax)
}

// repair flips a device between paging and M4 when its own rows rule out
// every point under its current case for every k but not under the other:
// one such device makes every ILP of the assignment infeasible, and the
// loop could never move. It returns cases unchanged when nothing flips.
func (f *fixedPoint) repair(cases []Case, force []bool) []Case {
	var out []Case
	ok := func(p int, c Case) bool {
		for _, k := range f.ks {
			if v, _ := f.vars(p, c, k); v.feasibleAlone() {
				return true
			}
		}
		return false
	}
	for p, i := range f.ring {
		x := &f.q.devs[i]
		if ok(p, cases[p]) {
			continue
		}
		alts := []Case{M4}
		if !x.slowDsk && !force[p] {
			alts = append(alts, overloadCase(x.kind), thrashCase(x.kind))
		}
		for _, alt := range alts {
			if alt != cases[p] && ok(p, alt) {
				if out == nil {
					out = slices.Clone(cases)
				}
				out[p] = alt
				break
			}
		}
	}
	if out == nil {
		return cases
	}
	return out
}

// kvBound is the largest layer count per round whose KV cache fits in
// room bytes at k rounds.
func (q *prob) kvBound(room int64, k int) int {
	if room < 0 {
		return -1
	}
	if q.kvL == 0 {
		return 1 << 30
	}
	return clampInt(floorDiv(room, int64(k)*q.kvL))
}

// solveK solves one ILP and scores its answer with the full model.
//
// It skips the solver when a lower bound on the ILP's optimum (plus its
// constant) cannot beat cutoff, the best plan so far: a skipped ILP could
// not have become the best plan. A case assignment whose every k is
// skipped ends its run, so the iterations that would have followed it are
// not explored (a heuristic cut, like the iteration cap).
func (f *fixedPoint) solveK(cases []Case, k int, cutoff float64) (*cand, error) {
	ilp, konst := f.build(cases, k)
	if ilp.triviallyInfeasible() {
		return nil, nil
	}
	if lb := ilp.lowerBound() + konst; lb > cutoff*(1+1e-12) {
		f.st.Pruned++
		return nil, nil
	}
	f.st.ILPs++
	sol, err := f.s.SolveLayers(ilp)
	if errors.Is(err, ErrILPInfeasible) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("halda: solve the ILP for k=%d: %w", k, err)
	}
	if !ilp.Feasible(sol.W, sol.N) {
		return nil, fmt.Errorf("halda: the solver returned a point that breaks the ILP's rows for k=%d (w=%v n=%v)", k, sol.W, sol.N)
	}
	cs, t := f.q.evalRing(f.ring, k, sol.W, sol.N)
	c := &cand{ring: f.ring, k: k, w: sol.W, n: sol.N, cost: t, cases: make([]Case, len(cs))}
	for p := range cs {
		c.cases[p] = cs[p].cs
	}
	return c, nil
}

// memShare splits total layers over the ring in proportion to memory
// budgets (Algorithm 1 line 1; MemSched), each device ≥ 1, by largest
// remainders.
func (q *prob) memShare(ring []int, total int) []int {
	weights := make([]float64, len(ring))
	for p, i := range ring {
		weights[p] = float64(q.devs[i].budget())
	}
	return proportional(weights, total, 1)
}

// proportional splits total into integers ∝ weights, each ≥ floor (when
// total allows), by largest remainders; ties go to the earlier entry.
func proportional(weights []float64, total, floor int) []int {
	n := len(weights)
	out := make([]int, n)
	if n == 0 {
		return out
	}
	if total < floor*n {
		floor = 0
	}
	left := total - floor*n
	var sum float64
	for _, v := range weights {
		sum += max(v, 0)
	}
	rem := make([]float64, n)
	given := 0
	for i, v := range weights {
		share := float64(left) / float64(n)
		if sum > 0 {
			share = float64(left) * max(v, 0) / sum
		}
		out[i] = floor + int(share)
		rem[i] = share - math.Floor(share)
		given += int(share)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return rem[idx[a]] > rem[idx[b]] })
	for j := 0; given < left; j++ {
		out[idx[j%n]]++
		given++
	}
	return out
}

// infeasible explains why no plan exists for the devices in set.
func (q *prob) infeasible(set []int) error {
	m := q.Model
	var hardNeed, hardHave, allHave int64
	fast := false
	for _, i := range set {
		x := &q.devs[i]
		hardNeed += m.CPUBufferBytes
		if x.kind == kindMetal {
			hardNeed += m.GPUBufferBytes
		}
		hardHave += x.ramCap()
		allHave += x.ramCap() + max(x.dCUDA-m.GPUBufferBytes, 0)
		if !x.slowDsk {
			fast = true
		}
	}
	hardNeed += int64(q.L) * q.kvL
	allNeed := int64(q.L)*q.bp + q.bio + int64(len(set))*m.CPUBufferBytes
	e := &NoFeasiblePlanError{Devices: len(set), ContextTokens: m.ContextTokens}
	switch {
	case hardNeed > hardHave:
		e.Reason, e.NeedBytes, e.HaveBytes = ReasonKVCache, hardNeed, hardHave
	case allNeed > allHave && !fast:
		e.Reason, e.NeedBytes, e.HaveBytes = ReasonNoFastDisk, allNeed, allHave
	default:
		e.Reason, e.NeedBytes, e.HaveBytes = ReasonNoRoom, allNeed, allHave
	}
	return e
}

// plan turns the winning candidate into a Plan.
// drop is device i left out of the plan for why.
func (q *prob) drop(i int, why string) Dropped {
	return Dropped{Device: q.devs[i].Name, ID: q.devs[i].ID, Reason: why}
}

func (q *prob) plan(c *cand, dropped []Dropped, st Stats) Plan {
	W := q.L / c.k
	costs, total := q.evalRing(c.ring, c.k, c.w, c.n)
	pl := Plan{K: c.k, Window: W, Dropped: dropped, PredictedMs: total * 1e3, Streams: q.streams, Stats: st}
	off := 0
	for p, i := range c.ring {
		x := &q.devs[i]
		cs := costs[p]
		a := Assignment{
			Device: x.Name, ID: x.ID, OS: x.OS, Case: cs.cs, W: c.w[p], N: c.n[p],
			Layers:    []LayerRange{},
			ComputeMs: cs.comp * 1e3, DiskMs: cs.disk * 1e3, NetworkMs: cs.net * 1e3, PredictedMs: cs.total() * 1e3,
			RAMBytes: cs.ram, VRAMBytes: cs.vram, ResidentBytes: cs.resident,
		}
		if c.w[p] > 0 {
			for r := range c.k {
				start := r*W + off
				a.Layers = append(a.Layers, LayerRange{start, start + c.w[p]})
			}
		}
		off += c.w[p]
		pl.ComputeMs += cs.comp * 1e3
		pl.DiskMs += cs.disk * 1e3
		pl.NetworkMs += cs.net * 1e3
		pl.Ring = append(pl.Ring, a)
	}
	return pl
}

// Rescore predicts plan's time per token under p: the same devices, order,
// rounds and windows, scored with p's profiles. A plan made earlier was
// scored with the profiles of then; comparing it with a fresh plan is fair
// only when both are scored alike (calibration moves the coefficients
// between two requests). Its memory holds plan.Streams conversations, not
// p.Streams. Errors wrap ErrInvalidProblem when p is invalid
// or plan does not fit it (a device p lacks, windows that do not cover the
// model's layers in K rounds).
func Rescore(p Problem, plan Plan) (Plan, error) {
	// The plan's memory holds the conversations it admitted, not those p
	// asks for.
	p.Streams = max(plan.Streams, 1)
	q, err := prepare(p)
	if err != nil {
		return Plan{}, err
	}
	if plan.K < 1 || len(plan.Ring) == 0 || q.L%plan.K != 0 {
		return Plan{}, invalid("plan.k", "is %d for %d layers and %d devices; a plan runs K ≥ 1 rounds dividing the layers", plan.K, q.L, len(plan.Ring))
	}
	index := map[string]int{}
	for i, d := range q.devs {
		index[d.Name] = i
	}
	c := &cand{k: plan.K}
	sum := 0
	for p, a := range plan.Ring {
		i, ok := index[a.Device]
		switch {
		case !ok:
			return Plan{}, invalid("plan.ring", "has device %q, which the problem lacks", a.Device)
		case (p == 0) != (i == 0):
			return Plan{}, invalid("plan.ring", "starts with %q; a plan's ring starts with the problem's head, %q", plan.Ring[0].Device, q.devs[0].Name)
		case slices.Contains(c.ring, i):
			return Plan{}, invalid("plan.ring", "lists device %q twice", a.Device)
		case a.W < 0 || a.N < 0 || a.N > a.W:
			return Plan{}, invalid("plan.ring", "gives device %q %d layers a round, %d on the GPU", a.Device, a.W, a.N)
		}
		c.ring, c.w, c.n = append(c.ring, i), append(c.w, a.W), append(c.n, a.N)
		sum += a.W
	}
	if sum*plan.K != q.L {
		return Plan{}, invalid("plan.ring", "covers %d layers in %d rounds of %d; the model has %d", sum*plan.K, plan.K, sum, q.L)
	}
	return q.plan(c, plan.Dropped, plan.Stats), nil
}
