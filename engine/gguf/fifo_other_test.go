//go:build !unix

package gguf

import "testing"

// mkfifo: Windows has no named pipes in the file system; the directory
// case covers "not a regular file" there.
func mkfifo(*testing.T, string) bool { return false }
