//go:build linux || darwin

package runner

import (
	"os"
	"syscall"
)

// protocolStdout returns a duplicate of fd 1 for the protocol and points fd 1
// at stderr, so anything the engine's C code prints lands in the log instead
// of in the middle of a JSON line.
func protocolStdout() (*os.File, error) {
	fd, err := syscall.Dup(1)
	if err != nil {
		return nil, err
	}
	syscall.CloseOnExec(fd)
	if err := dup2(2, 1); err != nil {
		_ = syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "runner-protocol"), nil
}
