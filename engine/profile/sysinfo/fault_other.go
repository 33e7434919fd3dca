//go:build !linux

package sysinfo

import (
	"fmt"
	"os"
)

// faultSweep: other systems have no reliable way for an unprivileged
// process to drop one file's pages; Halda falls back to the direct-read
// throughputs there.
func faultSweep(f *os.File, _ int64, _ []Extent) (Fault, error) {
	return Fault{}, fmt.Errorf("%w (%s)", ErrFaultUnsupported, f.Name())
}
