package sysinfo

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// faultSweep evicts the extents' span (POSIX_FADV_DONTNEED drops clean
// pages no process maps), checks with mincore that they are gone, and times the
// sweep over a fresh mapping of the whole file.
func faultSweep(f *os.File, size int64, sweep []Extent) (Fault, error) {
	page := os.Getpagesize()
	m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return Fault{}, fmt.Errorf("sysinfo: map %s: %w", f.Name(), err)
	}
	defer func() { _ = unix.Munmap(m) }() // a read-only mapping: unmapping cannot lose data
	var r float64
	// Pages just written may still sit in per-CPU LRU batches that the
	// first DONTNEED skips; a second pass gets them.
	for range 2 {
		if err := evict(f, sweep); err != nil {
			return Fault{}, err
		}
		if r, err = residency(m, sweep, page); err != nil {
			return Fault{}, fmt.Errorf("sysinfo: mincore %s: %w", f.Name(), err)
		}
		if r <= maxResident {
			break
		}
	}
	if r > maxResident {
		return Fault{Resident: r}, fmt.Errorf("%w: %.0f%% of the pages of %s stayed cached", ErrFaultCached, 100*r, f.Name())
	}
	bytes, sec, sum := timeSweep(m, sweep, page)
	return Fault{BytesPerSec: float64(bytes) / sec, Bytes: bytes, Resident: r, sum: sum}, nil
}

// evictAlign: the page cache may hold a file in large folios (up to 2 MiB
// here), and DONTNEED skips a folio the range does not cover whole; so the
// span of the extents is evicted, rounded outwards to this.
const evictAlign = 2 << 20

func evict(f *os.File, sweep []Extent) error {
	lo, hi := sweep[0].Off, sweep[0].Off+sweep[0].Len
	for _, e := range sweep {
		lo, hi = min(lo, e.Off), max(hi, e.Off+e.Len)
	}
	lo, hi = lo&^(evictAlign-1), (hi+evictAlign-1)&^(evictAlign-1)
	if err := unix.Fadvise(int(f.Fd()), lo, hi-lo, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("sysinfo: drop %s from the page cache: %w", f.Name(), err)
	}
	return nil
}

// residency is the fraction of the extents' pages in the page cache.
func residency(m []byte, sweep []Extent, page int) (float64, error) {
	var pages, resident int64
	for _, e := range sweep {
		// mincore wants a page-aligned start.
		lo := e.Off &^ int64(page-1)
		vec := make([]byte, (e.Off+e.Len-lo+int64(page)-1)/int64(page))
		if err := mincore(m[lo:e.Off+e.Len], vec); err != nil {
			return 0, err
		}
		for _, v := range vec {
			resident += int64(v & 1)
		}
		pages += int64(len(vec))
	}
	return float64(resident) / float64(pages), nil
}

// mincore sets vec[i]&1 when page i of b is in the page cache.
func mincore(b, vec []byte) error {
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if e != 0 {
		return e
	}
	return nil
}
