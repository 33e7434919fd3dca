// Linux/Unix only: /proc, mincore and madvise, which Windows lacks
// (mmap_windows_test.go covers the mapping there).

//go:build unix

package ggml

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const bigModel = "../../testdata/models/llama-1g-Q8_0.gguf"

// procStatusKB reads a "Name:   123 kB" line of /proc/self/status.
func procStatusKB(t *testing.T, name string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
			v, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("%s not in /proc/self/status", name)
	return 0
}

// TestWeightsNotCopied: loading and running a window of a ~1 GB model grows
// the process's anonymous memory by no more than the KV cache, the compute
// buffer and 32 MB: the weights stay file-backed page cache.
func TestWeightsNotCopied(t *testing.T) {
	before := procStatusKB(t, "RssAnon")
	m := openT(t, bigModel)
	info := m.Info()
	w := newWindowT(t, m, WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, NCtx: 256, Threads: 1})
	if _, err := w.EvalTokens([]int32{1, 100, 200, 300}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := w.EvalTokens([]int32{400}, 4); err != nil {
		t.Fatal(err)
	}
	after := procStatusKB(t, "RssAnon")
	file := procStatusKB(t, "RssFile")
	grew := (after - before) * 1024
	allowed := w.KVBytes() + w.ComputeBytes() + 32<<20
	t.Logf("model %d MB: RssAnon %d -> %d kB (+%.1f MB), KV %.1f MB, compute %.1f MB, RssFile %d MB",
		info.FileSize>>20, before, after, float64(grew)/(1<<20), float64(w.KVBytes())/(1<<20), float64(w.ComputeBytes())/(1<<20), file>>10)
	if grew > allowed {
		t.Fatalf("RssAnon grew by %d bytes, more than KV %d + compute %d + 32 MB", grew, w.KVBytes(), w.ComputeBytes())
	}
	if file*1024 < info.FileSize/2 {
		t.Fatalf("RssFile %d kB: the weights were not read from the mapping", file)
	}
}

// residency returns, for each range, the fraction of its pages in memory.
func residency(t *testing.T, m *Model, rs []ByteRange) float64 {
	t.Helper()
	page := int64(os.Getpagesize())
	var in, all int64
	for _, r := range rs {
		b := m.data[r.Off/page*page : r.Off+r.Len]
		vec := make([]byte, (len(b)+int(page)-1)/int(page))
		if err := mincore(b, vec); err != nil {
			t.Fatal(err)
		}
		for _, v := range vec {
			in += int64(v & 1)
		}
		all += int64(len(vec))
	}
	if all == 0 {
		return 0
	}
	return float64(in) / float64(all)
}

func mincore(b, vec []byte) error {
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	if e != 0 {
		return e
	}
	return nil
}

// dropCache evicts the whole file from this process and the page cache.
func dropCache(t *testing.T, m *Model, path string) {
	t.Helper()
	if err := m.Release([]ByteRange{{0, int64(len(m.data))}}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := fadviseDontNeed(f); err != nil {
		t.Fatal(err)
	}
}

// privateCopy copies a model to a file no other test reads, so that page
// cache residency is this test's alone.
func privateCopy(t *testing.T, src string) string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	// Under testdata/models, not t.TempDir(): /tmp may be tmpfs (it is in a
	// fresh-machine root), whose pages are the file and are never dropped.
	models, err := filepath.Abs("../../testdata/models")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(models, "private-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) }) // best effort: a temporary directory
	dst := filepath.Join(dir, filepath.Base(src))
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Sync(); err != nil { // dirty pages cannot be dropped
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestWindowTouchesOnlyItsLayers: after the file is dropped from the page
// cache, evaluating window [1,3) makes layers 1 and 2 resident and nothing
// else (but boundary pages); Prefetch makes a window resident before it runs.
func TestWindowTouchesOnlyItsLayers(t *testing.T) {
	path := privateCopy(t, "../../testdata/models/llama-F32.gguf")
	m := openT(t, path)
	info := m.Info()
	// No read-around, so residency shows exactly the pages the engine read
	// (the kernel would otherwise read up to read_ahead_kb around each fault).
	if err := unix.Madvise(m.data, unix.MADV_RANDOM); err != nil {
		t.Fatal(err)
	}
	const boundary = 2.0 / 100 // a few shared pages at the ends of a range
	layers := make([][]ByteRange, info.NLayer)
	for il := range layers {
		layers[il] = m.LayerRanges(il)
	}
	hidden := make([]float32, 2*info.NEmbd)
	for i := range hidden {
		hidden[i] = float32(i%7) / 7
	}

	dropCache(t, m, path)
	if r := residency(t, m, []ByteRange{{0, int64(len(m.data))}}); r > boundary {
		t.Fatalf("after dropping the cache %.1f%% of the file is resident", 100*r)
	}
	w := newWindowT(t, m, WindowParams{First: 1, Last: 3, NCtx: 16, Threads: 1})
	if _, err := w.EvalHidden(hidden, 0); err != nil {
		t.Fatal(err)
	}
	for il, rs := range layers {
		r := residency(t, m, rs)
		t.Logf("after eval of [1,3): layer %d %.1f%% resident", il, 100*r)
		// 95%: this VM's DAMON may page a few out again at any time.
		if in := il >= 1 && il < 3; in && r < 0.95 {
			t.Errorf("layer %d of the window is only %.1f%% resident", il, 100*r)
		} else if !in && r > boundary {
			t.Errorf("layer %d outside the window is %.1f%% resident", il, 100*r)
		}
	}
	embd, _ := m.file.tensor("token_embd.weight")
	if r := residency(t, m, []ByteRange{{embd.offset, embd.size}}); r > boundary {
		t.Errorf("token_embd is %.1f%% resident; the window does not embed", 100*r)
	}

	dropCache(t, m, path)
	w2 := newWindowT(t, m, WindowParams{First: 3, Last: 4, NCtx: 16, Threads: 1})
	if err := m.Prefetch(w2.WeightRanges()); err != nil {
		t.Fatal(err)
	}
	if r := residency(t, m, w2.WeightRanges()); r < 0.95 {
		t.Fatalf("after Prefetch the window is only %.1f%% resident", 100*r)
	}
	if r := residency(t, m, layers[0]); r > boundary {
		t.Errorf("Prefetch of layer 3 made layer 0 %.1f%% resident", 100*r)
	}
	if _, err := w2.EvalHidden(hidden, 0); err != nil {
		t.Fatal(err)
	}
	if err := m.Release(w2.WeightRanges()); err != nil {
		t.Fatal(err)
	}
}

func TestWeightRanges(t *testing.T) {
	m := openT(t, stories)
	info := m.Info()
	page := int64(os.Getpagesize())
	full := newWindowT(t, m, WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, NCtx: 8})
	var total int64
	prevEnd := int64(-1)
	for _, r := range full.WeightRanges() {
		if r.Off%page != 0 || (r.Off+r.Len)%page != 0 && r.Off+r.Len != info.FileSize {
			t.Errorf("range %+v is not page aligned", r)
		}
		if r.Off <= prevEnd {
			t.Errorf("range %+v overlaps or touches the previous one (ends %d)", r, prevEnd)
		}
		prevEnd = r.Off + r.Len
		total += r.Len
	}
	// All tensors of the model: the data section, up to page rounding.
	if total < info.FileSize-m.file.dataOff-page || total > info.FileSize {
		t.Errorf("the full window's ranges cover %d bytes; data section is %d", total, info.FileSize-m.file.dataOff)
	}
	mid := newWindowT(t, m, WindowParams{First: 1, Last: 2, NCtx: 8})
	var midTotal int64
	for _, r := range mid.WeightRanges() {
		midTotal += r.Len
	}
	if midTotal <= 0 || midTotal >= total/2 {
		t.Errorf("one layer's ranges cover %d of %d bytes", midTotal, total)
	}
}

func fadviseDontNeed(f *os.File) error { return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED) }

func nowMs() float64 { return float64(time.Now().UnixNano()) / 1e6 }

// TestWindowsShareOneMapping: three windows of one model, one mapping of the
// file in the process.
func TestWindowsShareOneMapping(t *testing.T) {
	path := privateCopy(t, stories)
	m := openT(t, path)
	info := m.Info()
	for _, p := range []WindowParams{
		{First: 0, Last: 2, Embed: true, NCtx: 8},
		{First: 2, Last: 4, NCtx: 8},
		{First: 4, Last: info.NLayer, Output: true, NCtx: 8},
	} {
		newWindowT(t, m, p)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(maps), path); n != 1 {
		t.Fatalf("%s is mapped %d times, want once", path, n)
	}
}
