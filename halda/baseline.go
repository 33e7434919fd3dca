package halda

import (
	"errors"
	"math"
	"sort"
)

// ErrOutOfMemory: a baseline's split puts more KV cache, buffers or GPU
// layers on a device than it has memory for (it would crash, not page).
var ErrOutOfMemory = errors.New("halda: the split does not fit in memory")

// MemSched is the memory-proportional baseline of 001 A.10 (exo's rule, and
// prima.cpp without Halda): each round's window is split over all devices
// in proportion to their memory (RAM, plus VRAM or the Metal budget), every
// device at least one layer, GPU layers up to the VRAM row. It is given
// pipelined-ring rounds like Halda and keeps its best k, so the comparison
// isolates the split. It returns ErrOutOfMemory when every k crashes a
// device.
func MemSched(p Problem) (Plan, error) { return baseline(p, (*prob).memSplit) }

// PerfSched is the compute-proportional baseline of 001 A.10 (Galaxy's
// rule): split by compute speed, move the layers a device has no memory for
// to devices with room, fastest first, and when no device has room left,
// give the rest to CPUs in proportion to their speed (they page). Like
// MemSched it keeps its best k.
func PerfSched(p Problem) (Plan, error) { return baseline(p, (*prob).perfSplit) }

func (q *prob) memSplit(ring []int, k int) ([]int, []int) {
	{
		ws := make([]float64, len(ring))
		for j, i := range ring {
			x := &q.devs[i]
			ws[j] = float64(x.budget() + x.dCUDA)
		}
		w := proportional(ws, q.L/k, 1)
		return w, q.fillGPU(ring, k, w)
	}
}

func (q *prob) perfSplit(ring []int, k int) ([]int, []int) {
	{
		W := q.L / k
		speed := make([]float64, len(ring))
		cpu := make([]float64, len(ring))
		room := make([]int, len(ring)) // layers per round that fit in RAM+VRAM
		for j, i := range ring {
			x := &q.devs[i]
			speed[j] = 1 / q.layerSec(i)
			cpu[j] = 1 / x.alpha
			f := &fixedPoint{q: q, ring: ring}
			ram := max(floorDiv(x.ramCap()-q.cio(x, j == 0), int64(k)*q.bp), 0)
			if x.kind == kindMetal { // one pool
				room[j] = clampInt(ram)
			} else {
				room[j] = clampInt(ram) + f.gpuCap(j, k)
			}
		}
		w := proportional(speed, W, 1)
		// OOM migration: take the excess off, hand it to devices with room,
		// fastest first.
		excess := 0
		for j := range w {
			if over := w[j] - max(room[j], 1); over > 0 {
				w[j] -= over
				excess += over
			}
		}
		order := make([]int, len(ring))
		for j := range order {
			order[j] = j
		}
		sort.SliceStable(order, func(a, b int) bool { return speed[order[a]] > speed[order[b]] })
		for _, j := range order {
			if excess == 0 {
				break
			}
			if free := room[j] - w[j]; free > 0 {
				t := min(free, excess)
				w[j] += t
				excess -= t
			}
		}
		// Greedy fallback: the rest goes to CPUs in proportion to CPU speed.
		if excess > 0 {
			extra := proportional(cpu, excess, 0)
			for j := range w {
				w[j] += extra[j]
			}
		}
		return w, q.fillGPU(ring, k, w)
	}
}

// fillGPU puts as many of each window's layers on the GPU as its VRAM row
// allows.
func (q *prob) fillGPU(ring []int, k int, w []int) []int {
	f := &fixedPoint{q: q, ring: ring}
	n := make([]int, len(ring))
	for j, i := range ring {
		if q.devs[i].gpu != NoGPU {
			n[j] = min(w[j], f.gpuCap(j, k))
		}
	}
	return n
}

func baseline(p Problem, split func(q *prob, ring []int, k int) (w, n []int)) (Plan, error) {
	q, err := prepare(p)
	if err != nil {
		return Plan{}, err
	}
	all := make([]int, len(q.devs))
	for i := range all {
		all[i] = i
	}
	if len(all)-1 > q.L {
		all = all[:q.L+1] // a baseline keeps the first devices it can use
	}
	ring, _ := q.order(all)
	best := q.bestSplit(ring, split)
	if best == nil {
		return Plan{PredictedMs: math.Inf(1)}, ErrOutOfMemory
	}
	return q.plan(best, nil, Stats{}), nil
}

// bestSplit scores a heuristic split at every k and keeps the best one that
// fits in memory, or nil.
func (q *prob) bestSplit(ring []int, split func(q *prob, ring []int, k int) (w, n []int)) *cand {
	var best *cand
	for _, k := range q.validK(len(ring)) {
		if q.L/k < len(ring) {
			continue // baselines give every device, the head too, ≥ 1 layer
		}
		w, n := split(q, ring, k)
		costs, t := q.evalRing(ring, k, w, n)
		fits := true
		for _, c := range costs {
			fits = fits && c.fits
		}
		if fits && (best == nil || t < best.cost) {
			best = &cand{ring: ring, k: k, w: w, n: n, cost: t}
		}
	}
	return best
}
