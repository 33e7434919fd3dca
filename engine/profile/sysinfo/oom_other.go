//go:build !linux

package sysinfo

// oomKills: macOS and Windows keep no such count for a process to read
// (Windows does not kill for memory; macOS's jetsam logs only).
func oomKills() (int64, bool) { return 0, false }
