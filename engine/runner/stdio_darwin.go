package runner

import (
	"os/exec"
	"syscall"
)

func dup2(from, to int) error { return syscall.Dup2(from, to) }

// childAttrs: macOS has no parent-death signal; the child exits when its
// stdin closes.
func childAttrs(*exec.Cmd) {}

// childStarted: nothing to do once the child runs (see stdio_windows.go).
func childStarted(*exec.Cmd) error { return nil }
