//go:build windows

package ggml

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/windows"
)

// mapFile maps the whole file read-only (PAGE_READONLY section, FILE_MAP_READ
// view): the pages are the file's standby/cache pages, shared with every other
// view and evictable by the memory manager, and ggml uses them in place. The
// section handle is closed at once: the view keeps the section alive.
func mapFile(f *os.File, size int64) ([]byte, error) {
	h, err := windows.CreateFileMapping(windows.Handle(f.Fd()), nil, windows.PAGE_READONLY,
		uint32(uint64(size)>>32), uint32(size), nil)
	if err != nil {
		return nil, fmt.Errorf("CreateFileMapping: %w", err)
	}
	defer func() { _ = windows.CloseHandle(h) }() // nothing to do if it fails
	addr, err := windows.MapViewOfFile(h, windows.FILE_MAP_READ, 0, 0, uintptr(size))
	if err != nil {
		return nil, fmt.Errorf("MapViewOfFile: %w", err)
	}
	// The view is not Go memory (the GC never moves it); converting through
	// a pointer to addr is the form vet accepts for a uintptr from the OS.
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&addr))), int(size)), nil
}

func unmapFile(b []byte) error {
	if b == nil {
		return nil
	}
	return windows.UnmapViewOfFile(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// PrefetchVirtualMemory (Windows 8+) is not in x/sys/windows; looked up
// lazily so that a Windows without it still runs, on page faults alone.
var procPrefetchVirtualMemory = windows.NewLazySystemDLL("kernel32.dll").NewProc("PrefetchVirtualMemory")

// memoryRangeEntry is WIN32_MEMORY_RANGE_ENTRY.
type memoryRangeEntry struct {
	addr uintptr
	size uintptr
}

// prefetch has PrefetchVirtualMemory read b with large concurrent I/Os, then
// touches one byte per page. The touch is what makes it match Linux's
// MADV_POPULATE_READ: PrefetchVirtualMemory only brings pages into the
// standby list (not this process's working set) and may skip them under
// memory pressure, so the reads map them now, off the evaluation's path,
// with cheap soft faults for what the prefetch already fetched.
func prefetch(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if procPrefetchVirtualMemory.Find() == nil {
		e := memoryRangeEntry{addr: uintptr(unsafe.Pointer(unsafe.SliceData(b))), size: uintptr(len(b))}
		// A failure is only a lost hint: the touch below still loads every page.
		_, _, _ = procPrefetchVirtualMemory.Call(uintptr(windows.CurrentProcess()), 1, uintptr(unsafe.Pointer(&e)), 0)
	}
	page := os.Getpagesize()
	var sum byte
	for i := 0; i < len(b); i += page {
		sum += b[i]
	}
	sum += b[len(b)-1]
	runtime.KeepAlive(sum)
	return nil
}

// release drops b's pages from this process's working set with VirtualUnlock.
// Documented behaviour: on pages that are not locked it "removes such pages
// from the working set, sets last error to ERROR_NOT_LOCKED, and returns
// FALSE", so ERROR_NOT_LOCKED is the expected, successful outcome. The clean
// file pages go to the standby list, where any demand for memory takes them
// at once and from where our next touch soft-faults them back: the
// counterpart of MADV_PAGEOUT + MADV_DONTNEED on Linux, and the weights stay
// valid in place. The alternatives do not fit a read-only file view:
// DiscardVirtualMemory fails unless the pages are PAGE_READWRITE and leaves
// their contents undefined; OfferVirtualMemory is for private memory, makes the
// range inaccessible until ReclaimVirtualMemory, and also leaves it undefined;
// unmapping views per window would split the one mapping ggml's tensors point
// into (and views are placed at 64 KiB granularity).
func release(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	err := windows.VirtualUnlock(uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if err == nil || errors.Is(err, windows.ERROR_NOT_LOCKED) {
		return nil
	}
	return fmt.Errorf("VirtualUnlock: %w", err)
}

// resident is not measured on Windows (QueryWorkingSetEx would; nothing
// needs it there yet).
func resident(b []byte) (in, all int64, err error) { return 0, 0, ErrUnsupportedOS }
