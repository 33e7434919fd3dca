//go:build !linux

package app

// onMainThread cannot tell the main thread apart on this OS without cgo;
// the init in mainthread.go is what keeps the tray there.
func onMainThread() (on, known bool) { return false, false }
