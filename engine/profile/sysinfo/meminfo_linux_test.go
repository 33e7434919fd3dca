package sysinfo

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMeminfo(t *testing.T) {
	got := parseMeminfo([]byte("MemTotal:       24576000 kB\nMemAvailable:   1000 kB\nHugePages_Total:       0\nbad\n"))
	want := map[string]int64{"MemTotal": 24576000 * 1024, "MemAvailable": 1000 * 1024, "HugePages_Total": 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseMeminfo (-want +got):\n%s", diff)
	}
}
