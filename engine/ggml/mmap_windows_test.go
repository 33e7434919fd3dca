package ggml

import (
	"bytes"
	"os"
	"slices"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
)

// MEMORY_BASIC_INFORMATION.Type values (not in x/sys/windows).
const (
	memPrivate = 0x20000
	memMapped  = 0x40000
)

// underWine: Wine's ntdll exports wine_get_version; Windows' does not.
func underWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

// inWorkingSet returns the fraction of rs's pages that are in this
// process's working set (QueryWorkingSetEx's Valid bit).
func inWorkingSet(t *testing.T, m *Model, rs []ByteRange) float64 {
	t.Helper()
	page := int64(os.Getpagesize())
	var q []windows.PSAPI_WORKING_SET_EX_INFORMATION
	for _, r := range rs {
		b, err := m.slice(r)
		if err != nil {
			t.Fatal(err)
		}
		for off := int64(0); off < int64(len(b)); off += page {
			q = append(q, windows.PSAPI_WORKING_SET_EX_INFORMATION{VirtualAddress: windows.Pointer(unsafe.Pointer(&b[off]))})
		}
	}
	if err := windows.QueryWorkingSetEx(windows.CurrentProcess(), uintptr(unsafe.Pointer(unsafe.SliceData(q))),
		uint32(len(q))*uint32(unsafe.Sizeof(q[0]))); err != nil {
		t.Fatalf("QueryWorkingSetEx: %v", err)
	}
	n := 0
	for _, e := range q {
		if e.VirtualAttributes.Valid() {
			n++
		}
	}
	return float64(n) / float64(len(q))
}

// TestWindowsMapIsTheFile: the weights are a read-only view of the file
// itself (MEM_MAPPED, not MEM_PRIVATE: never copied into private memory)
// and hold the file's bytes.
func TestWindowsMapIsTheFile(t *testing.T) {
	m := openT(t, stories)
	var mbi windows.MemoryBasicInformation
	base := uintptr(unsafe.Pointer(unsafe.SliceData(m.data)))
	if err := windows.VirtualQuery(base, &mbi, unsafe.Sizeof(mbi)); err != nil {
		t.Fatal(err)
	}
	t.Logf("view at %#x: type %#x, protect %#x, region %d bytes of a %d-byte file", base, mbi.Type, mbi.Protect, mbi.RegionSize, len(m.data))
	if mbi.Type != memMapped {
		t.Errorf("the weights' memory has type %#x, want MEM_MAPPED %#x (MEM_PRIVATE is %#x: a copy)", mbi.Type, memMapped, memPrivate)
	}
	if mbi.Protect != windows.PAGE_READONLY {
		t.Errorf("the weights' memory has protection %#x, want PAGE_READONLY", mbi.Protect)
	}
	want, err := os.ReadFile(stories)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m.data, want) {
		t.Error("the mapping does not hold the file's bytes")
	}
}

// TestWindowsPrefetchRelease: Prefetch puts a fresh window's pages in the
// working set; Release (VirtualUnlock) takes them out on Windows, and the weights
// stay valid in place: the same logits after a release as before it.
func TestWindowsPrefetchRelease(t *testing.T) {
	m := openT(t, stories)
	info := m.Info()
	p := WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, NCtx: 64, Threads: 1}
	w := newWindowT(t, m, p)
	rs := w.WeightRanges()
	// Nothing has read the weights yet: Prefetch must bring them in.
	fresh := inWorkingSet(t, m, rs)
	if err := m.Prefetch(rs); err != nil {
		t.Fatalf("Prefetch: %v", err)
	}
	if got := inWorkingSet(t, m, rs); got < 0.99 || fresh > 0.5 {
		t.Errorf("pages in the working set: %.1f%% before Prefetch, %.1f%% after; want few, then all", 100*fresh, 100*got)
	}
	toks := []int32{1, 100, 200, 300}
	before, err := w.EvalTokens(toks, 0)
	if err != nil {
		t.Fatal(err)
	}
	before = slices.Clone(before)

	if err := m.Release(rs); err != nil {
		t.Fatalf("Release: %v", err)
	}
	released := inWorkingSet(t, m, rs)
	if err := m.Prefetch(rs); err != nil {
		t.Fatalf("Prefetch: %v", err)
	}
	prefetched := inWorkingSet(t, m, rs)
	t.Logf("pages in the working set: %.0f%% after Release, %.0f%% after Prefetch", 100*released, 100*prefetched)
	if prefetched < 0.99 {
		t.Errorf("after Prefetch only %.1f%% of the window's pages are in the working set", 100*prefetched)
	}
	if underWine() {
		// Wine's VirtualUnlock leaves pages mapped; only Windows can show it.
		t.Log("under Wine: not checking that Release empties the working set")
	} else if released > 0.05 {
		t.Errorf("after Release %.1f%% of the window's pages are still in the working set", 100*released)
	}

	if err := m.Release(rs); err != nil {
		t.Fatalf("Release: %v", err)
	}
	w2 := newWindowT(t, m, p)
	after, err := w2.EvalTokens(toks, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, after) {
		t.Error("logits after Release differ from before: the weights did not stay valid in place")
	}
}
