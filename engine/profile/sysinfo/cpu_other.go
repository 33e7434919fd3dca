//go:build !linux && !darwin

package sysinfo

import "os"

// cpuModel on Windows: the identifier the system puts in every process's
// environment.
func cpuModel() string { return os.Getenv("PROCESSOR_IDENTIFIER") }
