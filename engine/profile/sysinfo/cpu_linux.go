package sysinfo

import (
	"os"
	"strings"
)

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			switch strings.TrimSpace(k) {
			case "model name", "Model", "Hardware":
				return strings.TrimSpace(v)
			}
		}
	}
	return ""
}
