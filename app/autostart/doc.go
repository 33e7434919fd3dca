// Package autostart makes the desktop app start at login where the app
// itself must ask for it: on macOS, a LaunchAgent in the user's
// ~/Library/LaunchAgents naming the installed app's binary, written at the
// tray's first start. Elsewhere the installer does it (the .deb's XDG
// autostart entry, the Windows installer's Run key) and this package does
// nothing.
//
// It is pure Go (no cgo), so build/test.sh vets it for darwin on Linux;
// Register's file work is tested on any OS by naming the OS.
//
// Why not SMAppService.agent(plistName:) with the plist build/macos-app.sh
// puts in Contents/Library/LaunchAgents: it needs Objective-C or Swift, which
// this machine cannot compile for Apple's SDK. A plist in ~/Library/
// LaunchAgents is what macOS has always loaded at login (13+ lists it under
// Login Items, "Allow in the Background", where a person can turn it off).
package autostart
