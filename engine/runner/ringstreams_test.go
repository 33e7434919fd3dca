//go:build !windows

package runner

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// Several ring_generate requests at once on one engine child (issue 19 item
// 3): the child takes a second ring_generate on the same model while one
// runs, instead of answering busy, and they go round one ring (a head and
// two worker processes) as streams of one job. 2 and then 4 greedy requests
// sent together overlap (every one has its first token before any has its
// last) and each gives the single device's reply to its prompt alone.
func TestRingConcurrentRequests(t *testing.T) {
	hd, w1, w2 := newDevice(t), newDevice(t), newDevice(t)
	serveRing(t, w1, hd)
	serveRing(t, w2, hd)
	lp := LoadParams{Model: smallModel, NCtx: 1024, Threads: 1}
	prompts := []string{"Once upon a time", "The dog ran to the big red ball", "She said", "Tom and Sue went to the park"}
	const maxTokens = 20
	var want [][]int32
	for _, p := range prompts {
		g := *greedy(maxTokens)
		g.Prompt = p
		want = append(want, reference(t, hd.sup, lp, g))
	}
	layers, nEmbd := modelShape(t, smallModel)
	rp := ringParams(evenPlan(1, layers, nEmbd, 1, hd, w1, w2), hd, w1, w2)
	rp.KeepMS = 60_000
	c := serve(t)
	next := uint64(100)
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d at once", n), func(t *testing.T) {
			ids := map[uint64]int{}
			for i := range n {
				g := *greedy(maxTokens)
				g.Prompt = prompts[i]
				next++
				ids[next] = i
				c.send(Request{ID: next, Op: OpRingGenerate, Load: &lp, Ring: &rp, Generate: &g})
			}
			got := make([][]int32, n)
			first, last := make([]time.Time, n), make([]time.Time, n)
			for ended := 0; ended < n; {
				ev := c.next()
				i, ok := ids[ev.ID]
				if !ok {
					continue
				}
				switch ev.Type {
				case EvToken:
					if got[i] = append(got[i], ev.Token.ID); len(got[i]) == 1 {
						first[i] = time.Now()
					}
					last[i] = time.Now()
				case EvError:
					t.Fatalf("request %d: %s: %s", i, ev.Code, ev.Error)
				case EvDone:
					ended++
				}
			}
			for i := range n {
				if !slices.Equal(got[i], want[i]) {
					t.Errorf("prompt %q with %d at once: ring reply %v, single device alone %v", prompts[i], n, got[i], want[i])
				}
			}
			if lastFirst, firstLast := slices.MaxFunc(first, time.Time.Compare), slices.MinFunc(last, time.Time.Compare); !lastFirst.Before(firstLast) {
				t.Errorf("the requests did not overlap: the last first token at %v, the first last token at %v", lastFirst.Format("15:04:05.000"), firstLast.Format("15:04:05.000"))
			}
		})
	}
}

// RingGenerate calls on one model at once run together through the
// Supervisor (ringgroup.go), one child's events handed to each: 2 and then 4
// overlap and each gives the single device's reply alone; then the
// supervisor serves a local generation again. (Not in the test above: an
// in-process child's ring threads end with its job, and a child process
// forked on one of them would get its parent-death signal.)
func TestRingConcurrentSupervisor(t *testing.T) {
	hd, w1, w2 := newDevice(t), newDevice(t), newDevice(t)
	serveRing(t, w1, hd)
	serveRing(t, w2, hd)
	lp := LoadParams{Model: smallModel, NCtx: 1024, Threads: 1}
	prompts := []string{"Once upon a time", "The dog ran to the big red ball", "She said", "Tom and Sue went to the park"}
	const maxTokens = 20
	var want [][]int32
	for _, p := range prompts {
		g := *greedy(maxTokens)
		g.Prompt = p
		want = append(want, reference(t, hd.sup, lp, g))
	}
	layers, nEmbd := modelShape(t, smallModel)
	rp := ringParams(evenPlan(1, layers, nEmbd, 1, hd, w1, w2), hd, w1, w2)
	rp.KeepMS = 60_000
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d at once through the supervisor", n), func(t *testing.T) {
			got := make([][]int32, n)
			first, last := make([]time.Time, n), make([]time.Time, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					g := *greedy(maxTokens)
					g.Prompt = prompts[i]
					_, errs[i] = hd.sup.RingGenerate(context.Background(), lp, rp, g, func(tk Token) error {
						if got[i] = append(got[i], tk.ID); len(got[i]) == 1 {
							first[i] = time.Now()
						}
						last[i] = time.Now()
						return nil
					})
				})
			}
			wg.Wait()
			for i := range n {
				if errs[i] != nil {
					t.Fatalf("request %d: %v", i, errs[i])
				}
				if !slices.Equal(got[i], want[i]) {
					t.Errorf("prompt %q with %d at once: ring reply %v, single device alone %v", prompts[i], n, got[i], want[i])
				}
			}
			if lastFirst, firstLast := slices.MaxFunc(first, time.Time.Compare), slices.MinFunc(last, time.Time.Compare); !lastFirst.Before(firstLast) {
				t.Errorf("the requests did not overlap: the last first token at %v, the first last token at %v", lastFirst.Format("15:04:05.000"), firstLast.Format("15:04:05.000"))
			}
		})
	}
	// The supervisor is free again: a local generation runs.
	g := *greedy(maxTokens)
	g.Prompt = prompts[0]
	if got := reference(t, hd.sup, lp, g); !slices.Equal(got, want[0]) {
		t.Errorf("after the ring group: %v, want %v", got, want[0])
	}
}
