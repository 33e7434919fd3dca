//go:build !linux

package sysinfo

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestFaultThroughputUnsupported(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, make([]byte, 8<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FaultThroughput(name, []Extent{{0, 8 << 20}}, 0); !errors.Is(err, ErrFaultUnsupported) {
		t.Errorf("FaultThroughput off Linux = %v, want ErrFaultUnsupported", err)
	}
}
