package ggml

import (
	"errors"

	"golang.org/x/sys/unix"
)

// willNeedChunk bounds one MADV_WILLNEED call: Linux caps a single request at
// the readahead window, so one call over a whole window loads only a sliver.
const willNeedChunk = 4 << 20

// prefetch populates the page tables of b from the page cache, reading from
// disk what is missing (MADV_POPULATE_READ, Linux >= 5.14), so the next
// evaluation neither waits for the disk nor takes a fault per page. Older
// kernels get chunked MADV_WILLNEED, which only starts the reads.
func prefetch(b []byte) error {
	err := unix.Madvise(b, unix.MADV_POPULATE_READ)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EINVAL) {
		return err
	}
	return willNeed(b)
}

func willNeed(b []byte) error {
	for len(b) > 0 {
		n := min(len(b), willNeedChunk)
		if err := unix.Madvise(b[:n], unix.MADV_WILLNEED); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// release asks the kernel to reclaim b's pages (MADV_PAGEOUT, Linux >= 5.4;
// it needs the pages still mapped, so it goes first) and unmaps them from this
// process (MADV_DONTNEED). Clean file pages are simply dropped.
func release(b []byte) error {
	if err := unix.Madvise(b, unix.MADV_PAGEOUT); err != nil && !errors.Is(err, unix.EINVAL) {
		return err
	}
	return unix.Madvise(b, unix.MADV_DONTNEED)
}
