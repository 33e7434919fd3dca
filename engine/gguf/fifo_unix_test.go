//go:build unix

package gguf

import (
	"syscall"
	"testing"
)

// mkfifo makes a named pipe at path, for the "not a regular file" case.
func mkfifo(t *testing.T, path string) bool {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	return true
}
