package sysinfo

import (
	"os"
	"syscall"
)

// openUncached opens with O_DIRECT; a file system that refuses it (tmpfs,
// some overlays) gets a plain open and posix_fadvise DONTNEED instead.
func openUncached(path string) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err == nil {
		return f, true, nil
	}
	f, err = os.Open(path)
	return f, false, err
}

const fadvDontNeed = 4 // POSIX_FADV_DONTNEED

func dropCache(f *os.File) error {
	_, _, e := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontNeed, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
