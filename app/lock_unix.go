//go:build unix

package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockAgent takes the per-user agent lock (an flock on agent.lock in the
// config directory). The OS drops it when the process dies, so a crash never
// leaves a stale lock.
func lockAgent(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "agent.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close() // never locked: nothing to release
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (config %s)", errAgentLocked, dir)
		}
		return nil, err
	}
	return func() { _ = f.Close() }, nil // closing releases the lock; nothing was written
}
