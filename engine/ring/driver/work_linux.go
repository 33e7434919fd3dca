package driver

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"syscall"
)

// engineThread locks the engine goroutine to its OS thread for the rest
// of its life and returns that thread's id, so that threadWork can read
// the CPU time it has used: ggml's compute runs its first thread's share
// on the calling thread, so the time grows while a Compute works and not
// while the engine waits or hangs.
func engineThread() int {
	runtime.LockOSThread()
	return syscall.Gettid()
}

// threadWork is the CPU time thread tid of this process has run, in ns
// (/proc/self/task/TID/schedstat's first field), or 0 when it cannot be
// read.
func threadWork(tid int) uint64 {
	if tid <= 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/schedstat")
	if err != nil {
		return 0
	}
	f, _, _ := bytes.Cut(b, []byte(" "))
	ns, err := strconv.ParseUint(string(f), 10, 64)
	if err != nil {
		return 0
	}
	return ns
}
