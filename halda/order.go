package halda

import "math"

// exhaustiveRing is the largest ring whose orders are all tried: 6! = 720
// orders of the non-head devices.
const exhaustiveRing = 7

// order returns the ring for a set of device indices, head first, and the
// time one hidden state takes around it (Σ of the link times between
// neighbours, the last device sending back to the head).
//
// Every device sends once per window, so a token costs k times the ring's
// cycle time in links whatever the windows are (eq. 19): the order decouples
// from (w, n) and is the shortest directed Hamiltonian cycle through the
// set. Up to exhaustiveRing devices every order is tried; beyond, nearest
// neighbour from the head and then 2-opt (segment reversal) until no move
// shortens the cycle.
func (q *prob) order(set []int) ([]int, float64) {
	head := set[0]
	rest := append(make([]int, 0, len(set)-1), set[1:]...)
	if len(rest) == 0 {
		return []int{head}, 0
	}
	if len(set) <= exhaustiveRing {
		best := append([]int{head}, rest...)
		bestCost := q.cycle(best)
		cur := append([]int{head}, rest...)
		used := make([]bool, len(rest))
		var rec func(pos int, acc float64)
		rec = func(pos int, acc float64) {
			if acc >= bestCost {
				return // times are ≥ 0: a prefix this long cannot win
			}
			if pos == len(cur) {
				if t := acc + q.link[cur[pos-1]][head]; t < bestCost {
					bestCost = t
					copy(best, cur)
				}
				return
			}
			for j, i := range rest {
				if used[j] {
					continue
				}
				used[j] = true
				cur[pos] = i
				rec(pos+1, acc+q.link[cur[pos-1]][i])
				used[j] = false
			}
		}
		rec(1, 0)
		return best, bestCost
	}
	// Nearest neighbour.
	ring := []int{head}
	left := append([]int(nil), rest...)
	for len(left) > 0 {
		last := ring[len(ring)-1]
		bj, bt := 0, math.Inf(1)
		for j, i := range left {
			if t := q.link[last][i]; t < bt {
				bj, bt = j, t
			}
		}
		ring = append(ring, left[bj])
		left = append(left[:bj], left[bj+1:]...)
	}
	// 2-opt on positions 1..n-1 (the head stays first). Links may be
	// asymmetric, so a reversal also flips the direction of every link
	// inside the segment: fwd and bwd carry those sums as j grows, which
	// scores each move in O(1).
	n := len(ring)
	for pass := 0; pass < 4*n; pass++ {
		improved := false
		for i := 1; i < n-1; i++ {
			var fwd, bwd float64
			for j := i + 1; j < n; j++ {
				fwd += q.link[ring[j-1]][ring[j]]
				bwd += q.link[ring[j]][ring[j-1]]
				prev, next := ring[i-1], ring[(j+1)%n]
				old := q.link[prev][ring[i]] + fwd + q.link[ring[j]][next]
				alt := q.link[prev][ring[j]] + bwd + q.link[ring[i]][next]
				if alt < old-1e-12*old {
					reverse(ring[i : j+1])
					improved = true
					break
				}
			}
		}
		if !improved {
			break
		}
	}
	return ring, q.cycle(ring)
}

func (q *prob) cycle(ring []int) float64 {
	var t float64
	for p, i := range ring {
		t += q.link[i][ring[(p+1)%len(ring)]]
	}
	return t
}

func reverse(s []int) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}
