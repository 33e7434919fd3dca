package sysinfo

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

// Disk is the measured read throughput of the disk holding a file.
type Disk struct {
	Path            string  `json:"path"`
	SeqBytesPerSec  float64 `json:"seq_read_bytes_per_s"`
	RandBytesPerSec float64 `json:"rand_read_bytes_per_s"`
	Uncached        bool    `json:"uncached"`                // reads bypassed the page cache (O_DIRECT, F_NOCACHE, NO_BUFFERING)
	DroppedCache    bool    `json:"dropped_cache,omitempty"` // fallback: the file's pages were dropped first
	// FaultBytesPerSec is the page-fault read throughput (FaultThroughput):
	// what paging weights in through a mapping gets. 0 where it is not
	// measured (not Linux).
	FaultBytesPerSec float64 `json:"fault_read_bytes_per_s,omitempty"`
	FaultScratch     bool    `json:"fault_scratch,omitempty"` // measured on a scratch file laid out like the model
	// ReadAheadBytes is a page fault's read-around on this disk
	// (ReadAheadBytes), 0 where the system does not say.
	ReadAheadBytes   int64 `json:"read_ahead_bytes,omitempty"`
	SeqBytes, RandIO int64 `json:"-"`
}

// DiskLimits bound one measurement.
type DiskLimits struct {
	SeqBytes int64         // most bytes read sequentially (default 256 MiB)
	SeqTime  time.Duration // default 0.8 s
	RandIOs  int           // most random reads (default 4096)
	RandTime time.Duration // default 0.5 s
}

func (l DiskLimits) withDefaults() DiskLimits {
	if l.SeqBytes <= 0 {
		l.SeqBytes = 256 << 20
	}
	if l.SeqTime <= 0 {
		l.SeqTime = 800 * time.Millisecond
	}
	if l.RandIOs <= 0 {
		l.RandIOs = 4096
	}
	if l.RandTime <= 0 {
		l.RandTime = 500 * time.Millisecond
	}
	return l
}

const (
	seqChunk  = 1 << 20
	randChunk = 64 << 10
	align     = 4096
)

// ErrDiskFileSmall is returned for a file too small to measure a disk on.
var ErrDiskFileSmall = errors.New("sysinfo: the file is smaller than 4 MiB; measure the disk on a larger file")

// ReadThroughput measures the sequential and random read throughput of the
// disk holding path by reading that file with the page cache bypassed.
// rng picks the random offsets.
func ReadThroughput(path string, lim DiskLimits, rng *rand.Rand) (Disk, error) {
	lim = lim.withDefaults()
	d := Disk{Path: path}
	f, direct, err := openUncached(path)
	if err != nil {
		return d, fmt.Errorf("sysinfo: open %s to measure its disk: %w", path, err)
	}
	defer f.Close()
	d.Uncached = direct
	st, err := f.Stat()
	if err != nil {
		return d, fmt.Errorf("sysinfo: stat %s: %w", path, err)
	}
	size := st.Size() &^ (align - 1)
	if size < 4<<20 {
		return d, fmt.Errorf("%w (%s has %d bytes)", ErrDiskFileSmall, path, st.Size())
	}
	buf := alignedBuffer(seqChunk)
	if !direct {
		d.DroppedCache = dropCache(f) == nil
	}
	// Sequential: from a random aligned start, wrapping at the end.
	off := rng.Int64N(size/align) * align
	var n int64
	start := time.Now()
	for n < lim.SeqBytes && (n < 8*seqChunk || time.Since(start) < lim.SeqTime) {
		want := min(int64(seqChunk), size-off)
		k, err := f.ReadAt(buf[:want], off)
		if err != nil && !errors.Is(err, io.EOF) {
			return d, fmt.Errorf("sysinfo: read %s at %d: %w", path, off, err)
		}
		n += int64(k)
		off += int64(k)
		if off >= size || k == 0 {
			off = 0
		}
	}
	d.SeqBytesPerSec = float64(n) / time.Since(start).Seconds()
	d.SeqBytes = n
	if !direct {
		_ = dropCache(f) // DroppedCache above already says whether it works here
	}
	// Random: 64 KiB at random aligned offsets.
	slots := (size - randChunk) / align
	var ios int
	start = time.Now()
	for ios < lim.RandIOs && (ios < 16 || time.Since(start) < lim.RandTime) {
		o := rng.Int64N(slots+1) * align
		if _, err := f.ReadAt(buf[:randChunk], o); err != nil && !errors.Is(err, io.EOF) {
			return d, fmt.Errorf("sysinfo: read %s at %d: %w", path, o, err)
		}
		ios++
	}
	d.RandBytesPerSec = float64(ios) * randChunk / time.Since(start).Seconds()
	d.RandIO = int64(ios)
	return d, nil
}

// alignedBuffer returns n bytes starting at a 4096-byte boundary, as
// uncached reads require.
func alignedBuffer(n int) []byte {
	b := make([]byte, n+align)
	var o int
	if r := int(addrOf(b) % align); r != 0 {
		o = align - r
	}
	return b[o : o+n : o+n]
}

// scratchPattern names ScratchFile's files (os.CreateTemp's pattern).
const scratchPattern = ".homering-disk-*"

// RemoveStaleScratch removes ScratchFile's files in dir last written more
// than age before now: a measurement killed before its cleanup (the agent
// kills a background measurement that does not stop in time) leaves one,
// and a live measurement writes its file within seconds. It returns how
// many it removed.
func RemoveStaleScratch(dir string, age time.Duration, now time.Time) (int, error) {
	names, err := filepath.Glob(filepath.Join(dir, scratchPattern))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		st, err := os.Lstat(name)
		if err != nil || !st.Mode().IsRegular() || now.Sub(st.ModTime()) <= age {
			continue
		}
		if os.Remove(name) == nil {
			n++
		}
	}
	return n, nil
}

// ScratchFile writes a file of size bytes in dir for measuring that disk when
// there is no model file yet, and returns its path; the caller removes it.
func ScratchFile(dir string, size int64) (string, error) {
	f, err := os.CreateTemp(dir, scratchPattern)
	if err != nil {
		return "", fmt.Errorf("sysinfo: create a scratch file in %s: %w", dir, err)
	}
	name := f.Name()
	chunk := make([]byte, seqChunk)
	for i := range chunk {
		chunk[i] = byte(i * 131)
	}
	for w := int64(0); w < size && err == nil; w += seqChunk {
		_, err = f.Write(chunk)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(name) // best effort; the write's error is the one to report
		return "", fmt.Errorf("sysinfo: write scratch file %s: %w", filepath.Base(name), err)
	}
	return name, nil
}
