package ggml

import (
	"syscall"
	"testing"
	"time"
)

// TestIdlePoolSleeps: after an evaluation the thread pool's workers sleep
// instead of spinning for the next graph. With ggml's default poll level a
// worker spins ~50 ms of CPU after every evaluation, which took a core from
// whatever ran next (in bench/engine, llama.cpp's decode step). Five idle
// gaps cost ~250 ms of CPU with spinning and ~0 without.
func TestIdlePoolSleeps(t *testing.T) {
	m := openT(t, stories)
	info := m.Info()
	w := newWindowT(t, m, WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, NCtx: testNCtx, Threads: 2})
	var idle time.Duration
	for i := range 5 {
		if _, err := w.EvalTokens([]int32{1}, i); err != nil {
			t.Fatal(err)
		}
		c0 := processCPU(t)
		time.Sleep(100 * time.Millisecond) // the idle gap being measured, not a wait for an event
		idle += processCPU(t) - c0
	}
	if idle > 100*time.Millisecond {
		t.Errorf("the process used %v of CPU in 500 ms of idle gaps after 2-thread evaluations; want < 100 ms (are the pool's workers spinning?)", idle)
	}
}

func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
