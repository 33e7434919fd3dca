package runner

import (
	"os/exec"
	"syscall"
)

func dup2(from, to int) error { return syscall.Dup3(from, to, 0) }

// childAttrs ends the child when the agent dies, even by SIGKILL, so no
// orphan keeps the model mapped.
func childAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// childStarted: nothing to do once the child runs (see stdio_windows.go).
func childStarted(*exec.Cmd) error { return nil }
