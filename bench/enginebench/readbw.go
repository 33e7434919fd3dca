package main

import (
	"runtime"
	"sync"
	"time"
	"unsafe"

	"homering/engine/ggml"
)

// readBandwidth measures how many bytes per second this machine reads from
// memory with threads threads, each sweeping its own part of a 1 GiB buffer
// (30 times the L3 of the machines we bench on, so the caches do not help):
// the best of reps sweeps, the ceiling a decode step approaches when its
// kernels keep up with memory. sink keeps the sums alive.
func readBandwidth(threads, reps int) (bytesPerSec float64, sink uint64) {
	const size = 1 << 30
	buf := make([]uint64, size/8)
	for i := range buf { // touch every page: no zero page, no faults while timed
		buf[i] = uint64(i)
	}
	part := len(buf) / threads / 32 * 32
	var best time.Duration
	for rep := 0; rep < reps; rep++ {
		var wg sync.WaitGroup
		sums := make([]uint64, threads)
		t0 := time.Now()
		for t := range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				s := buf[t*part : (t+1)*part]
				// ggml.SumBytes: 8 independent chains of 64-bit adds, so the
				// loads, not the adds, set the pace (engine/ggml's C, the
				// same read the profile times).
				sums[t] = ggml.SumBytes(unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*8))
			}()
		}
		wg.Wait()
		if d := time.Since(t0); best == 0 || d < best {
			best = d
		}
		for _, s := range sums {
			sink += s
		}
	}
	return float64(part*threads*8) / best.Seconds(), sink
}
