package sysinfo

import (
	"syscall"
	"time"
	"unsafe"
)

var (
	kernel32 = syscall.NewLazyDLL("kernel32.dll")
	qpc      = kernel32.NewProc("QueryPerformanceCounter")
	qpcFreq  = func() int64 {
		var f int64
		if r, _, _ := kernel32.NewProc("QueryPerformanceFrequency").Call(uintptr(unsafe.Pointer(&f))); r == 0 {
			return 0
		}
		return f
	}()
)

// now is QueryPerformanceCounter as nanoseconds since an arbitrary epoch,
// in a time.Time without a monotonic reading, so that Sub subtracts these
// nanoseconds. Since Windows XP the counter exists and the call cannot fail
// (Microsoft's documentation); without a frequency, Go's clock is used for
// every reading, never a mix of the two.
func now() time.Time {
	if qpcFreq <= 0 {
		return time.Now()
	}
	var c int64
	_, _, _ = qpc.Call(uintptr(unsafe.Pointer(&c)))
	// Split so that c·1e9 cannot overflow (it would after ~15 min at 10 MHz).
	return time.Unix(0, c/qpcFreq*1e9+c%qpcFreq*1e9/qpcFreq)
}
