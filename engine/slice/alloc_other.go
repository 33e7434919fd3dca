//go:build !linux

package slice

import (
	"errors"
	"os"
)

// allocate sets the size; a full disk shows when the data is written.
func allocate(f *os.File, size int64) error { return f.Truncate(size) }

// freeSpace is not measured here: pruning bounds the cache by size only.
func freeSpace(string) (int64, error) {
	return 0, errors.New("slice: free space unknown on this system")
}
