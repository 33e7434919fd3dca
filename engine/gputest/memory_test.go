package gputest

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"homering/engine/ggml"
)

// TestGPULayersLeaveThePageCache: a window's GPU layers are copied to the
// GPU when it is made and their file pages are released then; the mapping
// keeps only what the CPU reads, and WeightRanges (what the ring prefetches
// and releases) leaves the GPU layers out.
func TestGPULayersLeaveThePageCache(t *testing.T) {
	needGPU(t)
	m := open(t, filepath.Join(modelDir, "llama-F32.gguf"))
	info := m.Info()
	var gpuRanges []ggml.ByteRange
	for il := 1; il < info.NLayer; il++ {
		gpuRanges = append(gpuRanges, m.LayerRanges(il)...)
	}
	// Everything in the page cache first, as after a CPU run.
	if err := m.Prefetch(m.LayerRanges(0)); err != nil {
		t.Fatal(err)
	}
	if err := m.Prefetch(gpuRanges); err != nil {
		t.Fatal(err)
	}
	before, err := m.Residency(gpuRanges)
	if err != nil {
		t.Fatal(err)
	}
	gpu := make([]int, 0, info.NLayer-1)
	for il := 1; il < info.NLayer; il++ {
		gpu = append(gpu, il)
	}
	w := newWindow(t, m, ggml.WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, NCtx: nCtx, Threads: 1, GPULayers: gpu})
	after, err := m.Residency(gpuRanges)
	if err != nil {
		t.Fatal(err)
	}
	cpuPart, err := m.Residency(m.LayerRanges(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("GPU layers' pages resident: %.0f%% before the window, %.0f%% after; CPU layer 0: %.0f%%", 100*before, 100*after, 100*cpuPart)
	if before < 0.9 {
		t.Fatalf("prefetch left only %.0f%% of the pages resident; the test measures nothing", 100*before)
	}
	if w.GPUMapped() {
		// Unified memory (Metal): the GPU reads the mapping in place, so
		// nothing is copied and the pages are the weights: they stay.
		if after < 0.9 {
			t.Errorf("the GPU reads the mapping in place, yet only %.0f%% of its layers' pages stayed", 100*after)
		}
		if _, err := w.EvalTokens(tokens(8, info.NVocab, 1), 0); err != nil {
			t.Fatal(err)
		}
		if _, gpuMem := w.Memory(); gpuMem.Weights != 0 || gpuMem.KV <= 0 {
			t.Errorf("a mapped GPU window reports GPU memory %+v: want no copied weights and its KV", gpuMem)
		}
		return
	}
	// The end pages of a range may hold a neighbouring tensor the CPU reads.
	if after > 0.1 {
		t.Errorf("%.0f%% of the GPU layers' pages stayed in the page cache after the copy to the GPU", 100*after)
	}
	for _, r := range w.WeightRanges() {
		for _, g := range gpuRanges {
			// Page-aligned GPU layer ranges: a mapped range may share one
			// boundary page, not more.
			lo, hi := max(r.Off, g.Off), min(r.Off+r.Len, g.Off+g.Len)
			if hi-lo > 4096 {
				t.Fatalf("WeightRanges %+v covers the GPU layers' range %+v", r, g)
			}
		}
	}
	// The window still computes: the GPU copies are the weights now.
	if _, err := w.EvalTokens(tokens(8, info.NVocab, 1), 0); err != nil {
		t.Fatal(err)
	}
	cpu, gpuMem := w.Memory()
	t.Logf("memory: CPU %+v, GPU %+v", cpu, gpuMem)
	if gpuMem.Weights <= 0 || gpuMem.KV <= 0 || gpuMem.Compute <= 0 || cpu.KV <= 0 || cpu.Weights != 0 {
		t.Errorf("per-device memory does not match the placement (layer 0 on the CPU, %d on the GPU): CPU %+v, GPU %+v", len(gpu), cpu, gpuMem)
	}
}

// TestWindowTooLargeForTheGPU: a window whose GPU part does not fit in the
// GPU's memory fails when it is made (plan time), with one sentence that
// says so and what to do, never at its first evaluation.
func TestWindowTooLargeForTheGPU(t *testing.T) {
	needGPU(t)
	m := open(t, filepath.Join(modelDir, "llama-F32.gguf"))
	info := m.Info()
	free := ggml.GPUDevices()[0].FreeBytes
	// The largest context a window takes: its KV cache alone is 2 GiB for
	// the 4 GPU layers, and the compute buffers reserved for a full batch
	// attending over it are several times more.
	const nCtx = 1 << 20
	perToken := uint64(2*info.NHeadKV*info.NEmbdHead*2) * uint64(info.NLayer)
	if need := nCtx * perToken; need < free {
		t.Fatalf("the KV cache (%d MiB) would fit in the GPU's %d MiB; the test needs a larger model", need>>20, free>>20)
	}
	_, err := m.NewWindow(ggml.WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, NCtx: nCtx, Threads: 1,
		GPULayers: []int{0, 1, 2, 3}})
	if err == nil {
		t.Fatalf("a window with a %d-cell KV cache (%d MiB) on a GPU with %d MiB free was made", nCtx, nCtx*perToken>>20, free>>20)
	}
	t.Logf("error: %v", err)
	if !errors.Is(err, ggml.ErrGPUMemory) || !strings.Contains(err.Error(), "put fewer layers on the GPU") {
		t.Errorf("error %q is not ErrGPUMemory with what to do", err)
	}
}

// The profiler's GPU kernels run on the GPU: a matrix product's time with
// the weights in the GPU's cache and a hidden state's copies both ways.
func TestProfileTimesTheGPU(t *testing.T) {
	needGPU(t)
	m, err := ggml.TimeMatmulGPU(0, 8 /* Q8_0 */, 256, 256, 20*time.Millisecond, false)
	if err != nil {
		t.Fatal(err)
	}
	up, down, err := ggml.TimeGPUCopy(0, 256)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("q8_0 256x256: %v hot; hidden state in %v, out %v", m.Hot, up, down)
	if m.Hot <= 0 || down <= 0 || up < 0 {
		t.Errorf("hot %v, copies %v and %v: want positive times", m.Hot, up, down)
	}
	if _, err := ggml.TimeMatmulGPU(ggml.GPUCount(), 8, 256, 256, time.Millisecond, false); !errors.Is(err, ggml.ErrNoGPU) {
		t.Errorf("a GPU past the last: %v, want ErrNoGPU", err)
	}
}
