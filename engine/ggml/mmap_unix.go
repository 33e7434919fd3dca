//go:build unix

package ggml

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps the whole file read-only and shared: the pages are the file's
// page cache, evictable by the kernel and shared with every other mapping.
func mapFile(f *os.File, size int64) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
}

func unmapFile(b []byte) error {
	if b == nil {
		return nil
	}
	return unix.Munmap(b)
}
