package sysinfo

import (
	"syscall"
	"unsafe"
)

// processMemoryCountersEx is PROCESS_MEMORY_COUNTERS_EX.
type processMemoryCountersEx struct {
	CB                         uint32
	PageFaultCount             uint32
	PeakWorkingSetSize         uintptr
	WorkingSetSize             uintptr
	QuotaPeakPagedPoolUsage    uintptr
	QuotaPagedPoolUsage        uintptr
	QuotaPeakNonPagedPoolUsage uintptr
	QuotaNonPagedPoolUsage     uintptr
	PagefileUsage              uintptr
	PeakPagefileUsage          uintptr
	PrivateUsage               uintptr
}

// processAnon is the process's private commit (PrivateUsage): Windows'
// nearest counter to Linux's RssAnon (a mapped file's pages are not in it).
func processAnon() int64 {
	self, err := syscall.GetCurrentProcess()
	if err != nil {
		return 0
	}
	proc := syscall.NewLazyDLL("psapi.dll").NewProc("GetProcessMemoryInfo")
	var c processMemoryCountersEx
	c.CB = uint32(unsafe.Sizeof(c))
	if r, _, _ := proc.Call(uintptr(self), uintptr(unsafe.Pointer(&c)), uintptr(c.CB)); r == 0 {
		return 0
	}
	return int64(c.PrivateUsage)
}

// processAnonOf is not read for another process yet (it needs OpenProcess
// with PROCESS_QUERY_LIMITED_INFORMATION).
func processAnonOf(int) int64 { return 0 }
