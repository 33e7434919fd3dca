package runner

import (
	"os/exec"
	"syscall"
)

func dup2(from, to int) error { return syscall.Dup2(from, to) }

// childAttrs: macOS has no parent-death signal; the child exits when its
// stdin closes.
func childAttrs(*exec.Cmd) {}
