//go:build !linux || !cgo

package driver

// TrimMalloc does nothing here: only glibc has malloc_trim.
func TrimMalloc() {}
