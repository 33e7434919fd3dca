//go:build !linux && !darwin

package runner

// lowerPriority: no portable way here; the worker runs at normal priority.
func lowerPriority() error { return nil }
