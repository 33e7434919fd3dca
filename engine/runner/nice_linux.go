package runner

import (
	"errors"
	"os"
	"strconv"
	"syscall"
)

// workerNice is the CPU nice value of a runner that serves the ring.
const workerNice = 10

// lowerPriority sets every thread of this process to workerNice. Linux
// keeps the nice value per thread, and a new thread inherits its
// creator's: once all are lowered, threads made later (ggml's pool, Go's)
// are too.
func lowerPriority() error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return syscall.Setpriority(syscall.PRIO_PROCESS, 0, workerNice)
	}
	var errs []error
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, workerNice); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
