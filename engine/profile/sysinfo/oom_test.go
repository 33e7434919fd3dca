package sysinfo

import (
	"runtime"
	"testing"
)

func TestParseOOMKills(t *testing.T) {
	for _, tc := range []struct {
		text string
		n    int64
		ok   bool
	}{
		{"nr_free_pages 1234\noom_kill 7\nnr_dirty 3\n", 7, true},
		{"oom_kill 0\n", 0, true},
		{"nr_free_pages 1234\n", 0, false}, // kernels before 4.13
		{"oom_kill lots\n", 0, false},
		{"oom_kill_other 5\n", 0, false},
	} {
		if n, ok := parseOOMKills([]byte(tc.text)); n != tc.n || ok != tc.ok {
			t.Errorf("parseOOMKills(%q) = %d, %v; want %d, %v", tc.text, n, ok, tc.n, tc.ok)
		}
	}
	if n, ok := OOMKills(); runtime.GOOS == "linux" && (!ok || n < 0) {
		t.Errorf("OOMKills() = %d, %v on Linux, want this machine's count", n, ok)
	}
}
