package sysinfo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// diskDir is a directory on a real disk: /tmp may be tmpfs (it is in a
// fresh-machine root), whose pages are the file and never leave memory.
func diskDir(t *testing.T) string {
	base, err := filepath.Abs("../../../testdata/models")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(base, "sysinfo-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) }) // best effort: a temporary directory
	return dir
}

func TestFaultThroughput(t *testing.T) {
	name, err := ScratchFile(diskDir(t), 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	// Backward jumps, as a layer read in graph order from a file stored by
	// name: the second half first.
	order := []Extent{{8 << 20, 8 << 20}, {0, 8 << 20}}
	f, err := FaultThroughput(name, order, 12<<20)
	if err != nil {
		t.Fatal(err)
	}
	if f.BytesPerSec <= 0 || f.Bytes != 12<<20 || f.Resident > maxResident {
		t.Errorf("FaultThroughput = %+v: want a positive rate over exactly 12 MiB of evicted pages", f)
	}

	t.Run("pages another mapping holds are refused", func(t *testing.T) {
		fh, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		m, err := syscall.Mmap(int(fh.Fd()), 0, 16<<20, syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = syscall.Munmap(m) }() // read-only: unmapping cannot lose data
		var sum byte
		for i := 0; i < len(m); i += 4096 {
			sum += m[i] // map every page: eviction cannot drop them now
		}
		_, err = FaultThroughput(name, order, 0)
		if !errors.Is(err, ErrFaultCached) {
			t.Errorf("FaultThroughput of pages mapped elsewhere = %v (sum %d), want ErrFaultCached", err, sum)
		}
	})
	t.Run("bad extents", func(t *testing.T) {
		for _, tt := range []struct {
			name  string
			order []Extent
			want  error
		}{
			{"beyond the end", []Extent{{8 << 20, 9 << 20}}, nil},
			{"negative offset", []Extent{{-4096, 8 << 20}}, nil},
			{"too little to time", []Extent{{0, 1 << 20}}, ErrDiskFileSmall},
		} {
			_, err := FaultThroughput(name, tt.order, 0)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Errorf("%s: err = %v, want an error (%v)", tt.name, err, tt.want)
			}
		}
	})
}

// TestReadAheadBytes: the read-around of the disk under this package's
// directory is the block device's read_ahead_kb, as sysfs gives it.
func TestReadAheadBytes(t *testing.T) {
	got, ok := ReadAheadBytes(".")
	var st unix.Stat_t
	if err := unix.Stat(".", &st); err != nil {
		t.Fatal(err)
	}
	kb := -1
	for _, q := range []string{
		fmt.Sprintf("/sys/dev/block/%d:%d/queue/read_ahead_kb", unix.Major(st.Dev), unix.Minor(st.Dev)),
		fmt.Sprintf("/sys/dev/block/%d:%d/../queue/read_ahead_kb", unix.Major(st.Dev), unix.Minor(st.Dev)),
	} {
		if b, err := os.ReadFile(q); err == nil {
			if _, err := fmt.Sscan(string(b), &kb); err == nil {
				break
			}
		}
	}
	switch {
	case kb < 0 && ok:
		// The tree on a filesystem with no block device of its own
		// (overlayfs in a container or the fresh-machine chroot).
		t.Errorf("ReadAheadBytes = %d for a directory whose device %d:%d has no queue in sysfs", got, unix.Major(st.Dev), unix.Minor(st.Dev))
	case kb >= 0 && (!ok || int64(kb)<<10 != got):
		t.Errorf("ReadAheadBytes = %d, %v; sysfs says %d KiB", got, ok, kb)
	}
	if _, ok := ReadAheadBytes("/proc/self/status"); ok {
		t.Error("a file on procfs (no block device) has a read-around")
	}
}
