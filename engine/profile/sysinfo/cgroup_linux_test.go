package sysinfo

import (
	"os"
	"path/filepath"
	"testing"
)

// ReadCgroupDir reads a v1 or a v2 cgroup's directory as the profiler reads
// its own (file pages reclaimable, capped at the usage), and refuses a
// directory without a limit.
func TestReadCgroupDir(t *testing.T) {
	write := func(dir string, files map[string]string) {
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	v1, v2, none := t.TempDir(), t.TempDir(), t.TempDir()
	write(v1, map[string]string{"memory.limit_in_bytes": "1000\n", "memory.usage_in_bytes": "300\n",
		"memory.stat": "cache 250\ntotal_active_file 150\ntotal_inactive_file 100\n"})
	write(v2, map[string]string{"memory.max": "2000\n", "memory.current": "500\n",
		"memory.stat": "anon 100\nactive_file 300\ninactive_file 400\n"}) // file above usage: capped
	write(none, map[string]string{"memory.max": "max\n", "memory.current": "500\n"})
	for _, tc := range []struct {
		dir                        string
		version                    int
		limit, usage, file, nonRec int64
	}{{v1, 1, 1000, 300, 250, 50}, {v2, 2, 2000, 500, 500, 0}} {
		c, err := ReadCgroupDir(tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		if c.Version != tc.version || c.Limit != tc.limit || c.Usage != tc.usage || c.File != tc.file || c.Usage-c.File != tc.nonRec {
			t.Errorf("ReadCgroupDir(v%d) = %+v, want limit %d, usage %d, file %d", tc.version, c, tc.limit, tc.usage, tc.file)
		}
	}
	if c, err := ReadCgroupDir(none); err == nil {
		t.Errorf("a cgroup without a limit read as %+v, want an error", c)
	}
}
