package sysinfo

import (
	"encoding/binary"
	"fmt"
	"syscall"
)

// sysctlInt reads a 4- or 8-byte little-endian sysctl value. syscall.Sysctl
// returns the raw bytes with a trailing NUL stripped, so shorter results are
// zero-padded back.
func sysctlInt(name string) (int64, error) {
	s, err := syscall.Sysctl(name)
	if err != nil {
		return 0, fmt.Errorf("sysctl %s: %w", name, err)
	}
	b := make([]byte, 8)
	copy(b, s)
	if len(s) <= 4 {
		return int64(binary.LittleEndian.Uint32(b)), nil
	}
	return int64(binary.LittleEndian.Uint64(b)), nil
}

func readMemory() (Memory, error) {
	total, err := sysctlInt("hw.memsize")
	if err != nil {
		return Memory{}, fmt.Errorf("sysinfo: read memory: %w", err)
	}
	page, err := sysctlInt("hw.pagesize")
	if err != nil || page <= 0 {
		page = 16384
	}
	var pages int64
	for _, k := range []string{"vm.page_free_count", "vm.page_speculative_count", "vm.page_purgeable_count", "vm.page_pageable_external_count"} {
		if n, err := sysctlInt(k); err == nil {
			pages += n
		}
	}
	m := Memory{Total: total, Available: min(pages*page, total)}
	// struct xsw_usage { u64 total, avail, used; u32 pagesize; bool encrypted }
	if s, err := syscall.Sysctl("vm.swapusage"); err == nil && len(s) >= 16 {
		b := make([]byte, 24)
		copy(b, s)
		m.SwapTotal = int64(binary.LittleEndian.Uint64(b[0:]))
		m.SwapFree = int64(binary.LittleEndian.Uint64(b[8:]))
	}
	return m, nil
}
