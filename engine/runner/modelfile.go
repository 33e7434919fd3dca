package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// The engine maps the model file and uses it in place, so a file changed
// under it is read as it is now: cut short, a touch of a page past its new
// end kills the engine with SIGBUS; rewritten, it computes on other bytes;
// replaced or deleted, the old mapping lives on until the file is loaded
// again. The supervisor and the child therefore note the file as they
// mapped it, load it afresh when it is another file before a request, and
// say how it changed after the engine died.

// statModel is path's file as it is now; nil when it cannot be read.
func statModel(path string) os.FileInfo {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	return fi
}

// sameModel reports whether a and b are one file with the same contents
// as far as the file system tells: one inode, its size and modification
// time unchanged.
func sameModel(a, b os.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// modelChange says how the file at path differs from was, the file the
// engine mapped, completing "<name> …"; "" when it is the same (or was is
// unknown).
func modelChange(path string, was os.FileInfo) string {
	if was == nil {
		return ""
	}
	now, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "was deleted"
	case err != nil:
		return "can no longer be read"
	case !os.SameFile(was, now):
		return "was replaced by another file"
	case now.Size() < was.Size():
		return fmt.Sprintf("was cut short from %d to %d bytes", was.Size(), now.Size())
	case now.Size() != was.Size():
		return fmt.Sprintf("changed size from %d to %d bytes", was.Size(), now.Size())
	case !now.ModTime().Equal(was.ModTime()):
		return "was rewritten"
	}
	return ""
}
