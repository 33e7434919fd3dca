//go:build unix && !linux

package ggml

import "golang.org/x/sys/unix"

const willNeedChunk = 4 << 20

// prefetch starts reading b in chunks (see prefetch_linux.go for why chunks).
func prefetch(b []byte) error {
	for len(b) > 0 {
		n := min(len(b), willNeedChunk)
		if err := unix.Madvise(b[:n], unix.MADV_WILLNEED); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func release(b []byte) error { return unix.Madvise(b, unix.MADV_DONTNEED) }
