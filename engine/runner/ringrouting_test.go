// Not built for Windows: runner_test.go's helpers are not.

//go:build !windows

package runner

import (
	"testing"
	"time"

	"homering/engine/profile/modelprof"
)

// moeModel is a generated qwen3moe (4 layers, 8 experts, top 2).
const moeModel = "../../testdata/models/qwen3moe-F32.gguf"

// TestRingKeepsRouting: a ring job on a MoE model leaves, in each device's
// config directory, the routing its windows counted (every token's top-k
// on the layers it ran, none on the others), which the device's next job
// reads for its prefetch (engine/ring/ggmlengine's TestRoutingFeedsPrefetch)
// and its agent's planner for Halda's hot set; the next job adds to it.
func TestRingKeepsRouting(t *testing.T) {
	head, w := newDevice(t), newDevice(t)
	serveRing(t, w, head)
	id, err := modelprof.ModelID(moeModel)
	if err != nil {
		t.Fatal(err)
	}
	layers, nEmbd := modelShape(t, moeModel)
	lp := LoadParams{Model: moeModel, NCtx: 256, Threads: 1}
	g := *greedy(6)
	g.Prompt = "Once upon a time"
	plan := evenPlan(1, layers, nEmbd, 2, head, w) // head [0,1) [2,3), worker [1,2) [3,4)
	ids, _, _ := ringReply(t, head, lp, ringParams(plan, head, w), g)
	if len(ids) == 0 {
		t.Fatal("no tokens")
	}
	// picks waits for dir's routing (a worker's job ends after the head's
	// reply) and returns each layer's picks.
	picks := func(d *device, want func([]int64) bool) []int64 {
		t.Helper()
		var got []int64
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			r, err := modelprof.LoadRouting(modelprof.RoutingDir(d.dir), id)
			if err != nil {
				continue
			}
			got = got[:0]
			for _, c := range r.Counts {
				var s int64
				for _, v := range c {
					s += v
				}
				got = append(got, s)
			}
			if want(got) {
				break
			}
		}
		return got
	}
	ran := func(p []int64, mine ...int) bool {
		if len(p) != layers {
			return false
		}
		for il, s := range p {
			if (s > 0) != (il == mine[0] || il == mine[1]) {
				return false
			}
		}
		return true
	}
	hp := picks(head, func(p []int64) bool { return ran(p, 0, 2) })
	wp := picks(w, func(p []int64) bool { return ran(p, 1, 3) })
	if !ran(hp, 0, 2) || !ran(wp, 1, 3) {
		t.Fatalf("picks per layer kept: head %v (ran layers 0 and 2), worker %v (ran 1 and 3)", hp, wp)
	}
	// Every token of the prompt and the reply but the last (which no
	// window ran) went through each layer once, top-2 picked.
	if hp[0] != wp[1] || hp[0] != hp[2] || hp[0]%2 != 0 || hp[0] < 2*int64(len(ids)) {
		t.Errorf("picks per layer: head %v, worker %v; want the same even count ≥ %d on every layer run", hp, wp, 2*len(ids))
	}

	// The next job, k = 1 (head [0,2), worker [2,4)): each device's file
	// adds the layers it runs now to those it kept.
	ringReply(t, head, lp, ringParams(evenPlan(2, layers, nEmbd, 1, head, w), head, w), g)
	grew := func(p []int64) bool {
		return len(p) == layers && p[0] > hp[0] && p[1] > 0 && p[2] == hp[2] && p[3] == 0
	}
	if hp2 := picks(head, grew); !grew(hp2) {
		t.Errorf("after a second job on layers 0 and 1 the head keeps %v, want %v plus that job's picks on 0 and 1", hp2, hp)
	}
}
