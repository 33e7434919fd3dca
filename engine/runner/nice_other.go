//go:build !linux && !darwin

package runner

// workerNice is the CPU nice value a serving runner would take.
const workerNice = 10

// lowerPriority: no portable way here; the worker runs at normal priority.
func lowerPriority() error { return nil }
