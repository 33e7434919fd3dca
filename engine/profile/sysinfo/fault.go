package sysinfo

import (
	"errors"
	"fmt"
	"os"
)

// Extent is a byte range [Off, Off+Len) of a file.
type Extent struct{ Off, Len int64 }

// Fault is the measured throughput of reading a file through page faults on
// a read-only shared mapping, as the engine reads its weights: what a
// device that pages weights under memory pressure actually gets from its
// disk, with the kernel's fault-around and read-ahead as they are (no
// madvise), rather than what large direct reads get.
type Fault struct {
	BytesPerSec float64 `json:"bytes_per_s"`
	Bytes       int64   `json:"bytes"`    // bytes swept (counted pages × page size)
	Resident    float64 `json:"resident"` // fraction of the swept pages still cached after eviction
	sum         byte    // the bytes read, so the loads are not optimised away
}

// Errors of FaultThroughput.
var (
	ErrFaultUnsupported = errors.New("sysinfo: page-fault read throughput is measured on Linux only")
	// ErrFaultCached: the pages could not be dropped from the page cache
	// (another process maps them), so a sweep would time memory, not disk.
	ErrFaultCached = errors.New("sysinfo: the file's pages stay in the page cache (another process maps it); measure on a scratch file")
)

// maxResident is the largest fraction of the swept pages that may survive
// eviction before the sweep is refused (ErrFaultCached).
const maxResident = 0.1

// FaultThroughput drops the extents of path from the page cache, maps the
// file read-only and shared, and touches one byte per page of each extent in
// the order given (the order the engine's kernels read the weights, so the
// kernel's read-ahead sees the same forward runs and backward jumps), with
// one thread. The first maxBytes of the extents are swept (0: all).
func FaultThroughput(path string, order []Extent, maxBytes int64) (Fault, error) {
	f, err := os.Open(path)
	if err != nil {
		return Fault{}, fmt.Errorf("sysinfo: open %s to measure page faults: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Fault{}, fmt.Errorf("sysinfo: stat %s: %w", path, err)
	}
	var sweep []Extent
	var total int64
	for _, e := range order {
		if e.Off < 0 || e.Len <= 0 || e.Off+e.Len > st.Size() {
			return Fault{}, fmt.Errorf("sysinfo: extent [%d, %d) lies outside %s (%d bytes)", e.Off, e.Off+e.Len, path, st.Size())
		}
		if maxBytes > 0 && total+e.Len > maxBytes {
			e.Len = maxBytes - total
		}
		if e.Len <= 0 {
			break
		}
		sweep = append(sweep, e)
		total += e.Len
	}
	if total < 4<<20 {
		return Fault{}, fmt.Errorf("%w (%d bytes to sweep in %s)", ErrDiskFileSmall, total, path)
	}
	return faultSweep(f, st.Size(), sweep)
}

// touch reads one byte of every page of b in order and returns the number
// of pages touched; sink keeps the reads from being optimised away.
func touch(b []byte, page int) (pages int64, sink byte) {
	for i := 0; i < len(b); i += page {
		sink += b[i]
		pages++
	}
	return pages, sink
}

// timeSweep touches the extents of m in order.
func timeSweep(m []byte, sweep []Extent, page int) (bytes int64, sec float64, sum byte) {
	start := Now()
	for _, e := range sweep {
		n, s := touch(m[e.Off:e.Off+e.Len], page)
		bytes += n * int64(page)
		sum += s
	}
	return bytes, Since(start).Seconds(), sum
}
