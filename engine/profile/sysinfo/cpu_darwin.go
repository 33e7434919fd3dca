package sysinfo

import "syscall"

func cpuModel() string {
	s, _ := syscall.Sysctl("machdep.cpu.brand_string")
	return s
}
