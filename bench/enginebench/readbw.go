package main

/*
#include <stddef.h>
#include <stdint.h>

// hr_read: sums n bytes (a multiple of 256) of p as 64-bit words in 8
// independent chains, so that the loads, not the adds, set the pace: what a
// core can read, the ceiling a decode's weight stream is held to. The
// compiler vectorizes it to the build's widest loads.
static uint64_t hr_read(const uint64_t *p, size_t n) {
	uint64_t s[8] = {0};
	for (size_t i = 0; i < n / 8; i += 8) {
		for (int k = 0; k < 8; k++) {
			s[k] += p[i + k];
		}
	}
	return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}
*/
import "C"

import (
	"runtime"
	"sync"
	"time"
	"unsafe"
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
				sums[t] = uint64(C.hr_read((*C.uint64_t)(unsafe.Pointer(&s[0])), C.size_t(len(s)*8)))
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
