package agent

import (
	"os"
	"path/filepath"
	"testing"
)

// TestScanSkipsPartialDownloads: a download in progress (app/pull's
// NAME.gguf.partial and its .partial.etag) is never listed as a model.
func TestScanSkipsPartialDownloads(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"whole.gguf", "half.gguf.partial", "half.gguf.partial.etag"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := walkGGUF(dir)
	if len(got) != 1 || got[0].Name != "whole" {
		t.Errorf("scan found %+v, want whole alone", got)
	}
}
