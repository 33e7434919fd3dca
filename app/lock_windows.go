package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// lockAgent takes the per-user agent lock: an exclusive LockFileEx on
// agent.lock in the config directory, Windows' counterpart of lock_unix.go's
// flock. Windows releases it when the process dies.
func lockAgent(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "agent.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY,
		0, 1, 0, new(windows.Overlapped))
	if err != nil {
		_ = f.Close() // never locked: nothing to release
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			return nil, fmt.Errorf("%w (config %s)", errAgentLocked, dir)
		}
		return nil, err
	}
	return func() { _ = f.Close() }, nil // closing releases the lock; nothing was written
}
