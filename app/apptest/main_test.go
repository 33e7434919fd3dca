//go:build linux

package apptest

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the binary built for this test process.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildOnce.path != "" {
		_ = os.RemoveAll(filepath.Dir(buildOnce.path)) // best effort: a temporary directory
	}
	os.Exit(code)
}
