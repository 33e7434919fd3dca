package halda

// BalanceSlack is how much slower per token than Halda's optimum a plan
// may be predicted after balancing its windows (package doc, "Balance").
const BalanceSlack = 0.02

// balance evens out the devices' compute per token among plans predicted
// within BalanceSlack of c (package doc, "Balance"): it moves one CPU
// layer at a time from the device with the most compute and disk time to
// the one with the least that takes it, while every device keeps its case
// and fits, the pair's larger time falls and the total stays within the
// slack. GPU layers stay where they are. It returns c itself when no move
// helps.
func (q *prob) balance(c *cand) *cand {
	if c == nil || len(c.ring) < 2 {
		return c
	}
	budget := c.cost * (1 + BalanceSlack)
	w, n := append([]int(nil), c.w...), append([]int(nil), c.n...)
	costs, total := q.evalRing(c.ring, c.k, w, n)
	work := func(cs cost) float64 { return cs.comp + cs.disk }
	moved := false
	// Each move lowers the largest of the two times it touches and raises
	// none above it, so the sorted vector of times falls: the loop ends.
	// The cap is a guard: L·M moves are more than any balance needs.
	for range q.L * len(c.ring) {
		from := -1
		for p := range c.ring {
			minW := 1 // a worker holds a layer a round
			if p == 0 && !q.HeadHoldsLayers {
				minW = 0 // the head may only embed and sample (package doc)
			}
			if w[p]-1 < max(n[p], minW) {
				continue // no CPU layer to give, or its last one
			}
			if from < 0 || work(costs[p]) > work(costs[from]) {
				from = p
			}
		}
		if from < 0 {
			break
		}
		best, bestCosts, bestTotal := -1, []cost(nil), 0.0
		top := work(costs[from])
		for to := range c.ring {
			if to == from || work(costs[to]) >= top {
				continue
			}
			w[from]--
			w[to]++
			cs, t := q.evalRing(c.ring, c.k, w, n)
			w[from]++
			w[to]--
			ok := t <= budget && max(work(cs[from]), work(cs[to])) < top*(1-1e-12)
			for p := range cs {
				// The case includes the internal thrash variant: a move
				// across it leaves the ILP the optimum came from.
				ok = ok && cs[p].fits && cs[p].cs == costs[p].cs && cs[p].thrash == costs[p].thrash
			}
			if ok && (best < 0 || work(costs[to]) < work(costs[best])) {
				best, bestCosts, bestTotal = to, cs, t
			}
		}
		if best < 0 {
			break
		}
		w[from]--
		w[best]++
		costs, total = bestCosts, bestTotal
		moved = true
	}
	if !moved {
		return c
	}
	out := *c
	out.w, out.n, out.cost = w, n, total
	out.cases = make([]Case, len(costs))
	for p := range costs {
		out.cases[p] = costs[p].cs
	}
	return &out
}
