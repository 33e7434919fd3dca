// Not built for Windows: these tests stop and kill processes with signals
// and read /proc (stdio_windows_test.go covers the Windows child).

//go:build !windows

package runner

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRingStallAtStart counts false losses at the start of ring jobs:
// a head and a worker (loopback, k = 1, the runner's 500 ms tick) run
// jobs in which the worker stops (SIGSTOP, as a starved or paging device
// does) right after the first token, then goes on. Each iteration starts
// a fresh head process and runs
//
//	unseeded: its first job, the worker stopped 1.5 s (3 ticks: the floor);
//	teach:    a job with a 1 s stop (2 ticks, below the floor);
//	seeded:   a job with a 1.5 s stop, its session seeded with the gap
//	          the earlier jobs of this head process saw the worker end.
//
// A loss there is false: the worker comes back. It reports the share of
// unseeded and seeded jobs that lost the worker (the head re-plans alone).
// HOMERING_BENCH_MODEL picks the model as for BenchmarkRingDecode.
func BenchmarkRingStallAtStart(b *testing.B) {
	model := benchModel()
	head, w := newDeviceWith(b, Options{}), newDeviceWith(b, Options{})
	serveRing(b, w, head)
	lp := LoadParams{Model: model, NCtx: 256, Threads: 1}
	g := *greedy(8)
	g.Prompt = "Once upon a time"
	layers, nEmbd := modelShape(b, model)
	next := uint64(100)
	victim := w.sup.PID()
	b.Cleanup(func() { _ = syscall.Kill(victim, syscall.SIGCONT) }) // a worker left stopped would hang the next benchmark
	// job runs one job whose first token stops the worker for stop and
	// says whether the worker was lost.
	job := func(stop time.Duration) bool {
		next++
		rp := withProblem(b, ringParams(evenPlan(next, layers, nEmbd, 1, head, w), head, w), model, head, w)
		rp.TickMS = 500
		n := 0
		resumed := make(chan struct{})
		st, err := head.sup.RingGenerate(context.Background(), lp, rp, g, func(Token) error {
			if n++; n == 1 {
				_ = syscall.Kill(victim, syscall.SIGSTOP)
				time.AfterFunc(stop, func() {
					_ = syscall.Kill(victim, syscall.SIGCONT)
					close(resumed)
				})
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if n > 0 {
			<-resumed
		}
		return st.Replans > 0
	}
	// Warm: the worker's slice cached, the model mapped.
	if _, err := head.sup.RingGenerate(context.Background(), lp, ringParams(evenPlan(1, layers, nEmbd, 1, head, w), head, w), g, func(Token) error { return nil }); err != nil {
		b.Fatal(err)
	}
	var jobs, unseeded, taught, seeded int
	for b.Loop() {
		// A fresh head process (same identity): nothing learned of the
		// worker yet.
		_ = head.sup.Close()
		head.sup = New(Options{Command: childCommand})
		jobs++
		if job(1500 * time.Millisecond) {
			unseeded++
		}
		if job(time.Second) {
			taught++
		}
		if job(1500 * time.Millisecond) {
			seeded++
		}
	}
	b.ReportMetric(float64(unseeded)/float64(jobs), "unseeded_lost/job")
	b.ReportMetric(float64(seeded)/float64(jobs), "seeded_lost/job")
	b.ReportMetric(float64(taught)/float64(jobs), "1s_stop_lost/job")
}
