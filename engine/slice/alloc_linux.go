package slice

import (
	"errors"
	"os"
	"syscall"
)

// allocate reserves size bytes on disk, so that a full disk shows before the
// download; filesystems without fallocate fall back to a sparse truncate.
func allocate(f *os.File, size int64) error {
	err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return f.Truncate(size)
	}
	return err
}

// freeSpace is the bytes an unprivileged writer may still use in dir's
// filesystem.
func freeSpace(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize, nil
}
