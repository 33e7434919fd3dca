//go:build unix

package ggml

import (
	"os"
	"unsafe"

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

// resident counts b's pages in memory (b starts on a page boundary).
func resident(b []byte) (in, all int64, err error) {
	page := os.Getpagesize()
	vec := make([]byte, (len(b)+page-1)/page)
	if len(b) == 0 {
		return 0, 0, nil
	}
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	if e != 0 {
		return 0, 0, e
	}
	for _, v := range vec {
		in += int64(v & 1)
	}
	return in, int64(len(vec)), nil
}
