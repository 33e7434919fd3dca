//go:build !linux

package driver

import "runtime"

// engineThread locks the engine goroutine to its OS thread; outside Linux
// no thread's CPU time is read (0: none), and pongs carry no work.
func engineThread() int {
	runtime.LockOSThread()
	return 0
}

// threadWork is 0 (unknown) outside Linux.
func threadWork(int) uint64 { return 0 }
