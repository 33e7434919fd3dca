package app

import "runtime"

// init keeps the main goroutine on the process's main OS thread (thread 0)
// for the life of the process. It is the only init side effect in Homering,
// and it has to be an init: Go runs package inits on the main goroutine
// while the runtime still holds it on the main thread, and a LockOSThread
// made during init carries that hold into main.main. Any later call (in
// Main, in cmdTray) may already run on another thread, since the scheduler
// is free to move an unlocked goroutine. The tray needs thread 0:
// cmdTray runs tray.Run → systray.Run on the main goroutine, and on macOS
// AppKit creates the NSStatusItem and runs [NSApp run] only on the main
// thread (elsewhere it aborts: "NSWindow should only be instantiated on the
// main thread"); Wails' window (`homering ui`) has the same rule for Cocoa
// and GTK. Every other goroutine is unaffected; the locked thread simply
// stays the main goroutine's.
func init() { runtime.LockOSThread() }
