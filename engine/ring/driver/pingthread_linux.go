package driver

import (
	"log/slog"
	"runtime"
	"syscall"
	"unsafe"
)

// pingNice is the nice value a link's reader thread asks for: the
// priority of an ordinary process, whatever the runner lowered itself to.
const pingNice = 0

// PingThreadName is the name (/proc/PID/task/TID/comm) of a link reader's
// thread, so that it can be told from the engine's threads that stay at the
// runner's lowered priority.
const PingThreadName = "ring-link"

// pingThread gives the calling goroutine (a link's reader, which answers
// its pings, or its writer, which sends the pongs) an OS thread of its own
// for the rest of its life, and raises
// that thread's priority back to pingNice. Linux keeps the nice value per
// thread, and a serving runner lowers every thread to nice 10 (so that it
// yields to the user's programs): under a few CPU burners a nice-10
// thread waits its turn behind them, and pongs answered late read as
// silence. Raising a priority needs CAP_SYS_NICE or an RLIMIT_NICE that
// allows it; without them the thread stays where it was (its own thread
// still keeps it out of the engine's and hashing goroutines' way).
func pingThread(log *slog.Logger) {
	runtime.LockOSThread() // never unlocked: the thread ends with the reader
	name := []byte(PingThreadName + "\x00")
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0)
	tid := syscall.Gettid()
	cur, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	// The raw syscall returns 20 − nice.
	if err != nil || 20-cur <= pingNice {
		return
	}
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, pingNice); err != nil {
		log.Debug("ring link reader keeps its lowered priority", "nice", 20-cur, "err", err)
	}
}
