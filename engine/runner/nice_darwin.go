package runner

import "syscall"

// workerNice is the CPU nice value of a runner that serves the ring.
const workerNice = 10

// lowerPriority sets the process's nice value (per process on macOS).
func lowerPriority() error { return syscall.Setpriority(syscall.PRIO_PROCESS, 0, workerNice) }
