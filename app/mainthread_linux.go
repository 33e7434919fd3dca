package app

import "syscall"

// onMainThread reports whether the caller runs on the process's main thread
// (on Linux its thread ID equals the process ID); known is false where that
// cannot be told.
func onMainThread() (on, known bool) { return syscall.Gettid() == syscall.Getpid(), true }
