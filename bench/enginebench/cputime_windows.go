package main

import (
	"time"

	"golang.org/x/sys/windows"
)

// cpuTime is the user+system CPU time of the whole process so far.
func cpuTime() time.Duration {
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &created, &exited, &kernel, &user); err != nil {
		return 0
	}
	// Filetime counts 100 ns intervals; Nanoseconds() would read it as a date.
	ticks := func(f windows.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100)
}
