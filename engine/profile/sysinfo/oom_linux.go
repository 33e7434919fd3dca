package sysinfo

import "os"

func oomKills() (int64, bool) {
	b, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		return 0, false
	}
	return parseOOMKills(b)
}
