//go:build !linux && !darwin && !windows

package sysinfo

import (
	"fmt"
	"runtime"
)

func readMemory() (Memory, error) {
	return Memory{}, fmt.Errorf("sysinfo: reading memory on %s is not supported", runtime.GOOS)
}
