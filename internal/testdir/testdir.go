package testdir

import (
	"os"
	"path/filepath"
	"testing"
)

// Scratch is a new directory removed when tb ends: by os.RemoveAll, else
// entry by entry (children before their directory); what is left is logged,
// not failed.
func Scratch(tb testing.TB) string {
	tb.Helper()
	d, err := os.MkdirTemp("", "homering-test-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if os.RemoveAll(d) == nil {
			return
		}
		var names []string
		_ = filepath.WalkDir(d, func(path string, _ os.DirEntry, err error) error {
			names = append(names, path) // what cannot be read is reported below
			return nil
		})
		for i := len(names) - 1; i >= 0; i-- {
			_ = os.Remove(names[i])
		}
		if _, err := os.Stat(d); err == nil {
			tb.Logf("left %s", d)
		}
	})
	return d
}
