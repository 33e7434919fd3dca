//go:build !unix && !windows

package ggml

import "os"

// Mapping, prefetch and release are written for Unix (mmap, madvise) and
// Windows (mmap_windows.go). On other systems Open fails with
// ErrUnsupportedOS until a port exists.

func mapFile(f *os.File, size int64) ([]byte, error) { return nil, ErrUnsupportedOS }

func unmapFile(b []byte) error { return nil }

func prefetch(b []byte) error { return ErrUnsupportedOS }

func release(b []byte) error                       { return ErrUnsupportedOS }
func resident(b []byte) (in, all int64, err error) { return 0, 0, ErrUnsupportedOS }
