//go:build !linux && !darwin && !windows

package sysinfo

import "os"

func openUncached(path string) (*os.File, bool, error) {
	f, err := os.Open(path)
	return f, false, err
}

func dropCache(*os.File) error { return nil }
