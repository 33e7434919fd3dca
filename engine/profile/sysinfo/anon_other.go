//go:build !linux && !windows

package sysinfo

// processAnon is not read on this OS yet (macOS would need task_info).
func processAnon() int64 { return 0 }

func processAnonOf(int) int64 { return 0 }
