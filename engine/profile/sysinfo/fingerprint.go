package sysinfo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Fingerprint identifies this machine's hardware for the profile cache: a
// hash of the OS and architecture, the CPU model and count, total RAM
// (rounded to 256 MiB so a cgroup's accounting jitter does not change it),
// the host name and the extra strings given (the GPUs). When any of these
// changes the cached profile no longer describes this machine.
func Fingerprint(ramTotal int64, extra ...string) string {
	host, _ := os.Hostname()
	parts := []string{
		runtime.GOOS, runtime.GOARCH,
		fmt.Sprint(runtime.NumCPU()), CPUModel(),
		fmt.Sprint(ramTotal >> 28), host,
	}
	parts = append(parts, extra...)
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:8])
}

// CPUModel is the CPU's marketing name, or "" when unknown.
func CPUModel() string { return cpuModel() }
