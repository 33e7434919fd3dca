package testdir

import (
	"os"
	"path/filepath"
	"testing"
)

func TestScratchIsRemoved(t *testing.T) {
	var d string
	t.Run("use", func(t *testing.T) {
		d = Scratch(t)
		if err := os.MkdirAll(filepath.Join(d, "a", "b"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "a", "b", "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := os.Stat(d); !os.IsNotExist(err) {
		t.Errorf("%s is still there after its test: %v", d, err)
	}
}
