//go:build !linux

package driver

import (
	"log/slog"
	"runtime"
)

// pingThread gives a link's reader or writer an OS thread of its own (priorities
// are per process outside Linux, so there is none to raise).
func pingThread(*slog.Logger) { runtime.LockOSThread() }
