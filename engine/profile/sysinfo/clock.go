package sysinfo

import "time"

// Now reads the profiler's elapsed-time clock: use its readings only through
// Since or Sub, for intervals. Elsewhere it is time.Now (monotonic,
// nanoseconds). On Windows it is QueryPerformanceCounter, since Go's own
// clock there advances in coarse steps (1 ms under Wine 8.0, the interrupt
// tick on Windows), which made a layer step or a loopback ping measure 0;
// the wall value of a Windows reading is not the date.
func Now() time.Time { return now() }

// Since is the elapsed time from a reading of Now.
func Since(t time.Time) time.Duration { return now().Sub(t) }
