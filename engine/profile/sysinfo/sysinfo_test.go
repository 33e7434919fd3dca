package sysinfo

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReadCgroups(t *testing.T) {
	v1Mount := "25 20 0:22 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	v2Mount := "30 20 0:26 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n"
	hybrid := v1Mount + "31 20 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
	tests := []struct {
		name string
		fs   fstest.MapFS
		want *Cgroup
	}{{
		name: "v1 limit with page cache",
		fs: fstest.MapFS{
			"proc/self/cgroup":    {Data: []byte("4:memory:/bench\n0::/\n")},
			"proc/self/mountinfo": {Data: []byte(hybrid)},
			"sys/fs/cgroup/memory/bench/memory.limit_in_bytes": {Data: []byte("536870912\n")},
			"sys/fs/cgroup/memory/bench/memory.usage_in_bytes": {Data: []byte("400000000\n")},
			"sys/fs/cgroup/memory/bench/memory.stat":           {Data: []byte("cache 1\ntotal_active_file 100000000\ntotal_inactive_file 50000000\n")},
			"sys/fs/cgroup/memory/memory.limit_in_bytes":       {Data: []byte("9223372036854771712\n")},
		},
		want: &Cgroup{Version: 1, Path: "/sys/fs/cgroup/memory/bench", Limit: 536870912, Usage: 400000000, File: 150000000},
	}, {
		name: "v2 parent is tighter than the leaf",
		fs: fstest.MapFS{
			"proc/self/cgroup":                 {Data: []byte("0::/a/b\n")},
			"proc/self/mountinfo":              {Data: []byte(v2Mount)},
			"sys/fs/cgroup/a/b/memory.max":     {Data: []byte("max\n")},
			"sys/fs/cgroup/a/b/memory.current": {Data: []byte("1000\n")},
			"sys/fs/cgroup/a/memory.max":       {Data: []byte("1073741824\n")},
			"sys/fs/cgroup/a/memory.current":   {Data: []byte("73741824\n")},
			"sys/fs/cgroup/a/memory.stat":      {Data: []byte("anon 5\nactive_file 0\ninactive_file 1000000\n")},
		},
		want: &Cgroup{Version: 2, Path: "/sys/fs/cgroup/a", Limit: 1073741824, Usage: 73741824, File: 1000000},
	}, {
		name: "no limit anywhere",
		fs: fstest.MapFS{
			"proc/self/cgroup":           {Data: []byte("0::/x\n")},
			"proc/self/mountinfo":        {Data: []byte(v2Mount)},
			"sys/fs/cgroup/x/memory.max": {Data: []byte("max\n")},
		},
	}, {
		name: "container sees its cgroup at the mount root",
		fs: fstest.MapFS{
			"proc/self/cgroup":                           {Data: []byte("7:memory:/docker/abc\n")},
			"proc/self/mountinfo":                        {Data: []byte(v1Mount)},
			"sys/fs/cgroup/memory/memory.limit_in_bytes": {Data: []byte("2147483648\n")},
			"sys/fs/cgroup/memory/memory.usage_in_bytes": {Data: []byte("147483648\n")},
		},
		want: &Cgroup{Version: 1, Path: "/sys/fs/cgroup/memory", Limit: 2147483648, Usage: 147483648},
	}, {
		name: "garbage files",
		fs: fstest.MapFS{
			"proc/self/cgroup":    {Data: []byte("nonsense\n::\n4:memory\n")},
			"proc/self/mountinfo": {Data: []byte("bad line\n")},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readCgroups(tt.fs, "proc/self/cgroup", "proc/self/mountinfo")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("readCgroups (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCgroupAvailable(t *testing.T) {
	tests := []struct {
		name string
		c    Cgroup
		want int64
	}{
		{"room left", Cgroup{Limit: 100, Usage: 40}, 60},
		{"cache counts as available", Cgroup{Limit: 100, Usage: 90, File: 50}, 60},
		{"over the limit", Cgroup{Limit: 100, Usage: 130}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.available(); got != tt.want {
				t.Errorf("available() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestReadMemoryHere(t *testing.T) {
	m, err := ReadMemory()
	if err != nil {
		t.Fatal(err)
	}
	if m.Total <= 0 || m.Available <= 0 || m.Available > m.Total {
		t.Errorf("ReadMemory = %+v: want 0 < available ≤ total", m)
	}
}

func TestReadThroughput(t *testing.T) {
	dir := t.TempDir()
	name, err := ScratchFile(dir, 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ReadThroughput(name, DiskLimits{SeqBytes: 16 << 20, RandIOs: 64}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if d.SeqBytesPerSec <= 0 || d.RandBytesPerSec <= 0 || d.SeqBytes < 8<<20 || d.RandIO < 16 {
		t.Errorf("ReadThroughput = %+v: want positive rates over at least 8 MiB and 16 reads", d)
	}
	if runtime.GOOS == "linux" && !d.Uncached && !d.DroppedCache {
		t.Errorf("ReadThroughput on Linux neither bypassed nor dropped the page cache: %+v", d)
	}

	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadThroughput(small, DiskLimits{}, rand.New(rand.NewPCG(1, 2))); !errors.Is(err, ErrDiskFileSmall) {
		t.Errorf("ReadThroughput(4 KiB file) = %v, want ErrDiskFileSmall", err)
	}
	if _, err := ReadThroughput(filepath.Join(dir, "missing"), DiskLimits{}, rand.New(rand.NewPCG(1, 2))); err == nil {
		t.Error("ReadThroughput(missing file) succeeded")
	}
}

func TestFingerprintStable(t *testing.T) {
	a, b := Fingerprint(8<<30, "gpu0"), Fingerprint(8<<30+1<<20, "gpu0")
	if a != b || len(a) != 16 {
		t.Errorf("Fingerprint jitters with a 1 MiB RAM change or has the wrong length: %q %q", a, b)
	}
	if a == Fingerprint(16<<30, "gpu0") || a == Fingerprint(8<<30, "gpu1") {
		t.Error("Fingerprint ignores RAM or GPUs")
	}
}

func TestRemoveStaleScratch(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	write := func(name string, age time.Duration) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := write(".homering-disk-111", 2*time.Hour)
	fresh := write(".homering-disk-222", time.Minute)
	other := write("model.gguf", 48*time.Hour)
	n, err := RemoveStaleScratch(dir, time.Hour, now)
	if err != nil || n != 1 {
		t.Fatalf("RemoveStaleScratch = %d, %v; want 1 removed", n, err)
	}
	for p, want := range map[string]bool{old: false, fresh: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}
