package sysinfo

import (
	"fmt"
	"syscall"
	"unsafe"
)

// memoryStatusEx is MEMORYSTATUSEX.
type memoryStatusEx struct {
	Length               uint32
	MemoryLoad           uint32
	TotalPhys            uint64
	AvailPhys            uint64
	TotalPageFile        uint64
	AvailPageFile        uint64
	TotalVirtual         uint64
	AvailVirtual         uint64
	AvailExtendedVirtual uint64
}

func readMemory() (Memory, error) {
	proc := syscall.NewLazyDLL("kernel32.dll").NewProc("GlobalMemoryStatusEx")
	var s memoryStatusEx
	s.Length = uint32(unsafe.Sizeof(s))
	if r, _, err := proc.Call(uintptr(unsafe.Pointer(&s))); r == 0 {
		return Memory{}, fmt.Errorf("sysinfo: GlobalMemoryStatusEx: %w", err)
	}
	m := Memory{Total: int64(s.TotalPhys), Available: int64(s.AvailPhys)}
	// The commit limit counts RAM plus page files; the page files are swap.
	if s.TotalPageFile > s.TotalPhys {
		m.SwapTotal = int64(s.TotalPageFile - s.TotalPhys)
		m.SwapFree = int64(min(s.AvailPageFile, s.TotalPageFile-s.TotalPhys))
	}
	return m, nil
}
