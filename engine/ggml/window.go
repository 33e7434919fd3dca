package ggml

/*
#include <stdlib.h>
#include "engine.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// WindowParams says what a window computes.
type WindowParams struct {
	First, Last int   // layers [First, Last)
	Embed       bool  // token embedding in front: input must be tokens (needs First == 0)
	Output      bool  // output_norm + output head behind: output is logits (needs Last == NLayer)
	AllLogits   bool  // with Output: logits for every input token (else only the last)
	GPULayers   []int // layers to place on a GPU device; non-empty on a CPU-only machine is an error
	// OutputGPU puts the output norm and head (with Output) on the GPU too:
	// the head is a model's largest matrix, so a model wholly on the GPU
	// wants it there (llama.cpp's n_gpu_layers = n_layer + 1).
	OutputGPU bool
	// GPU picks the GPU (an index into GPUDevices) that GPULayers and
	// OutputGPU go to; 0 is the first, the best library's first card.
	GPU     int
	NCtx    int // KV cache capacity in tokens
	Threads int // 0 = all cores
	// KVRound is the granularity the KV cache's capacity is rounded up to,
	// in cells: 0 is llama.cpp's 256; a multiple of 32 (the padding of the
	// span attended over, HR_KV_SPAN_PAD) gives the same bits with less
	// memory for a short context (a ring job's cache holds its request).
	KVRound int
	// GGMLMatMul runs Q8_0, Q4_K and Q6_K weights on ggml's own matrix
	// kernels instead of ours (gemm.h): the same bits, slower; for
	// benchmarks and tests that compare the two.
	GGMLMatMul bool
	// Kernels picks the variant of our kernels (KernelsAVX512, …; see
	// Kernels): "" is the process's choice.
	Kernels string
}

// kvPad is llama.cpp's KV cache granularity: its cache holds a multiple of
// 256 cells. (The span attended over is padded less: see HR_KV_SPAN_PAD in
// engine.c.)
const kvPad = 256

// kvSpanPad is engine.c's HR_KV_SPAN_PAD: the span a graph attends over is
// padded to it, so a cache whose capacity is a multiple of it computes
// the same bits as one of kvPad's.
const kvSpanPad = 32

// Window evaluates layers [First, Last) of its model with its own KV cache.
// A Window is not safe for concurrent use; windows of one model may be used
// from different goroutines (their evaluations take turns).
type Window struct {
	m     *Model
	p     WindowParams
	c     *C.hr_window
	kvCap int // cells allocated: NCtx rounded up to kvPad or KVRound
	// mapped: the GPU reads the GPU layers from the mapping (unified memory)
	mapped bool
	// maxRows > 0 evaluates longer batches in parts of at most maxRows
	// (vulkanMoERows: see there).
	maxRows int
}

// vulkanMoERows bounds a batch of a MoE window with GPU layers on a Vulkan
// GPU: ggml-vulkan's MUL_MAT_ID gave wrong rows for batches over 32 on
// lavapipe (0.005-0.012 × max |logit| off the CPU up to 32 rows, 6.0 at 33:
// llama.cpp on the same library was as wrong, and two of its runs differed
// by 5.6), where up to 32 rows it takes another path. Parts of 32 rows put
// the same positions in the KV cache and cost a little prompt speed.
const vulkanMoERows = 32

// NewWindow checks p against the model and allocates the window's KV cache
// and scheduler. Weights are not read until the first evaluation.
func (m *Model) NewWindow(p WindowParams) (*Window, error) {
	info := m.info
	switch {
	case p.First < 0 || p.Last < p.First || p.Last > info.NLayer:
		return nil, fmt.Errorf("%w: layers [%d, %d) are not inside the model's %d layers", ErrBadWindow, p.First, p.Last, info.NLayer)
	case p.Embed && p.First != 0:
		return nil, fmt.Errorf("%w: a window with the token embedding must start at layer 0, not %d", ErrBadWindow, p.First)
	case p.Output && p.Last != info.NLayer:
		return nil, fmt.Errorf("%w: a window with the output head must end at layer %d, not %d", ErrBadWindow, info.NLayer, p.Last)
	case p.AllLogits && !p.Output:
		return nil, fmt.Errorf("%w: AllLogits needs Output", ErrBadWindow)
	case p.NCtx <= 0 || p.NCtx > 1<<20:
		return nil, fmt.Errorf("%w: NCtx %d must be between 1 and %d", ErrBadWindow, p.NCtx, 1<<20)
	case p.Threads < 0:
		return nil, fmt.Errorf("%w: Threads %d is negative", ErrBadWindow, p.Threads)
	case p.KVRound < 0 || p.KVRound%kvSpanPad != 0:
		return nil, fmt.Errorf("%w: KVRound %d is not 0 or a positive multiple of %d", ErrBadWindow, p.KVRound, kvSpanPad)
	case !p.Embed && !p.Output && p.First == p.Last:
		return nil, fmt.Errorf("%w: the window computes nothing (no layers, embedding or output)", ErrBadWindow)
	}
	if !m.hold.HasLayers(p.First, p.Last) || p.Embed && !m.hold.Input || p.Output && !m.hold.Output {
		return nil, &NotHeldError{Path: m.path, First: p.First, Last: p.Last, Embed: p.Embed, Output: p.Output, Held: m.hold}
	}
	for _, il := range p.GPULayers {
		if il < p.First || il >= p.Last {
			return nil, fmt.Errorf("%w: GPU layer %d is outside the window [%d, %d)", ErrBadWindow, il, p.First, p.Last)
		}
	}
	if p.OutputGPU && !p.Output {
		return nil, fmt.Errorf("%w: OutputGPU needs the output head in the window", ErrBadWindow)
	}
	if (len(p.GPULayers) > 0 || p.OutputGPU) && GPUCount() == 0 {
		return nil, ErrNoGPU
	}
	if n := GPUCount(); p.GPU < 0 || (p.GPU > 0 && p.GPU >= n) {
		return nil, fmt.Errorf("%w: GPU %d does not exist (this machine has %d)", ErrBadWindow, p.GPU, n)
	}
	kernels, err := windowKernels(p)
	if err != nil {
		return nil, err
	}
	p.GPULayers = append([]int(nil), p.GPULayers...)
	threads := p.Threads
	if threads == 0 || threads > m.threads {
		threads = m.threads
	}
	round := kvPad
	if p.KVRound > 0 {
		round = p.KVRound
	}
	kvCap := (p.NCtx + round - 1) / round * round

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	cp := C.hr_window_params{
		first:      C.int(p.First),
		last:       C.int(p.Last),
		embed:      cbool(p.Embed),
		output:     cbool(p.Output),
		all_logits: cbool(p.AllLogits),
		n_ctx:      C.int(kvCap),
		n_threads:  C.int(threads),
		kernels:    kernels,
		output_gpu: cbool(p.OutputGPU),
		gpu:        C.int(p.GPU),
	}
	var gl *C.int
	if len(p.GPULayers) > 0 {
		gl = (*C.int)(C.malloc(C.size_t(len(p.GPULayers)) * C.size_t(unsafe.Sizeof(C.int(0)))))
		defer C.free(unsafe.Pointer(gl))
		s := unsafe.Slice(gl, len(p.GPULayers))
		for i, il := range p.GPULayers {
			s[i] = C.int(il)
		}
		cp.gpu_layers = gl
		cp.n_gpu_layers = C.int(len(p.GPULayers))
	}
	var errbuf [256]C.char
	cw := C.hr_window_new(m.c, &cp, &errbuf[0], C.size_t(len(errbuf)))
	if cw == nil {
		msg := C.GoString(&errbuf[0])
		if strings.HasPrefix(msg, "the GPU") {
			return nil, fmt.Errorf("%w: window [%d, %d): %s", ErrGPUMemory, p.First, p.Last, msg)
		}
		return nil, fmt.Errorf("%w: new window [%d, %d): %s", ErrEval, p.First, p.Last, msg)
	}
	m.windows++
	w := &Window{m: m, p: p, c: cw, kvCap: kvCap, mapped: C.hr_window_gpu_mapped(cw) != 0}
	if info.NExpert > 0 && len(p.GPULayers) > 0 {
		if devs := GPUDevices(); p.GPU < len(devs) && strings.HasPrefix(devs[p.GPU].Name, "Vulkan") {
			w.maxRows = vulkanMoERows
		}
	}
	// The GPU layers' weights were copied to the GPU: their file pages
	// would only sit in the page cache beside the copy, so they go now
	// (on unified memory the GPU reads those very pages: they stay).
	if rs := m.gpuRanges(p); len(rs) > 0 && !w.mapped {
		if err := m.releaseLocked(rs); err != nil {
			_ = w.closeLocked() // the release's error is the one to report
			return nil, err
		}
	}
	return w, nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// Params returns the window's parameters.
func (w *Window) Params() WindowParams { return w.p }

// Close frees the window's KV cache and scheduler.
func (w *Window) Close() error {
	if w.c == nil {
		return nil
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	return w.closeLocked()
}

// closeLocked frees the window; the model's lock is held.
func (w *Window) closeLocked() error {
	C.hr_window_free(w.c)
	w.c = nil
	w.m.windows--
	return nil
}

// EvalTokens evaluates tokens at positions pos..pos+len(tokens)-1. The window
// must have Embed. It returns the hidden state [n*NEmbd] or, with Output, the
// logits [nOut*NVocab] (nOut = n with AllLogits, else 1).
func (w *Window) EvalTokens(tokens []int32, pos int) ([]float32, error) {
	return w.EvalTokensInto(nil, tokens, pos)
}

// EvalTokensInto is EvalTokens writing into dst's memory when its capacity
// holds the result (else a new slice), so a decode loop that reuses its
// logits allocates nothing per token: a vocabulary of 150k tokens is 600 KB
// a step for the garbage collector otherwise.
func (w *Window) EvalTokensInto(dst []float32, tokens []int32, pos int) ([]float32, error) {
	if w.c == nil {
		return nil, ErrClosed
	}
	if !w.p.Embed {
		return nil, fmt.Errorf("%w: window [%d, %d) has no token embedding; use EvalHidden", ErrBadInput, w.p.First, w.p.Last)
	}
	for i, t := range tokens {
		if t < 0 || int(t) >= w.m.info.NVocab {
			return nil, fmt.Errorf("%w: token %d at index %d is outside the vocabulary [0, %d)", ErrBadInput, t, i, w.m.info.NVocab)
		}
	}
	return w.evalParts(tokens, nil, len(tokens), pos, dst)
}

// EvalHidden evaluates the hidden state [n*NEmbd] F32 of n tokens at positions
// pos..pos+n-1. The window must not have Embed.
func (w *Window) EvalHidden(hidden []float32, pos int) ([]float32, error) {
	if w.c == nil {
		return nil, ErrClosed
	}
	if w.p.Embed {
		return nil, fmt.Errorf("%w: window [%d, %d) starts with the token embedding; use EvalTokens", ErrBadInput, w.p.First, w.p.Last)
	}
	e := w.m.info.NEmbd
	if len(hidden) == 0 || len(hidden)%e != 0 {
		return nil, fmt.Errorf("%w: hidden state of %d values is not a positive multiple of n_embd %d", ErrBadInput, len(hidden), e)
	}
	return w.evalParts(nil, hidden, len(hidden)/e, pos, nil)
}

// evalParts is eval, in parts of at most w.maxRows when the window has a
// bound: each part's hidden states (or, with AllLogits, logits) in order,
// or the last part's logits.
func (w *Window) evalParts(tokens []int32, hidden []float32, n, pos int, dst []float32) ([]float32, error) {
	if w.maxRows <= 0 || n <= w.maxRows || n > MaxBatch {
		return w.eval(tokens, hidden, n, pos, dst)
	}
	e := w.m.info.NEmbd
	var out []float32
	for off := 0; off < n; off += w.maxRows {
		k := min(w.maxRows, n-off)
		var part []float32
		var err error
		if tokens != nil {
			part, err = w.eval(tokens[off:off+k], nil, k, pos+off, nil)
		} else {
			part, err = w.eval(nil, hidden[off*e:(off+k)*e], k, pos+off, nil)
		}
		if err != nil {
			return nil, err
		}
		if w.p.Output && !w.p.AllLogits {
			out = part // only the last row's logits are asked for
		} else {
			out = append(out, part...)
		}
	}
	return out, nil
}

// MaxBatch bounds one evaluation, as llama.cpp's default n_ubatch does (and
// its mask and KV index inputs grow with batch × context); evaluate longer
// prompts in several calls.
const MaxBatch = 512

func (w *Window) eval(tokens []int32, hidden []float32, n, pos int, dst []float32) ([]float32, error) {
	if n <= 0 || n > MaxBatch {
		return nil, fmt.Errorf("%w: %d inputs; evaluate between 1 and %d at a time", ErrBadInput, n, MaxBatch)
	}
	hasKV := w.p.Last > w.p.First
	if pos < 0 || pos+n > w.p.NCtx {
		return nil, fmt.Errorf("%w: positions [%d, %d) do not fit NCtx %d", ErrOutOfContext, pos, pos+n, w.p.NCtx)
	}
	if hasKV {
		if used := w.KVLen(); pos != used {
			return nil, fmt.Errorf("%w: position %d is not the next one (%d are cached); call KVTruncate(%d) to evaluate from there", ErrBadInput, pos, used, pos)
		}
	}
	nOut := n
	cols := w.m.info.NEmbd
	if w.p.Output {
		cols = w.m.info.NVocab
		if !w.p.AllLogits {
			nOut = 1
		}
	}
	out := dst[:0]
	if cap(out) < nOut*cols {
		out = make([]float32, nOut*cols)
	}
	out = out[:nOut*cols]
	var pin runtime.Pinner
	defer pin.Unpin()
	var tp *C.int32_t
	var hp *C.float
	if tokens != nil {
		pin.Pin(&tokens[0])
		tp = (*C.int32_t)(unsafe.Pointer(&tokens[0]))
	}
	if hidden != nil {
		pin.Pin(&hidden[0])
		hp = (*C.float)(unsafe.Pointer(&hidden[0]))
	}
	pin.Pin(&out[0])

	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if w.m.closed || w.c == nil {
		return nil, ErrClosed
	}
	var errbuf [256]C.char
	rc := C.hr_window_eval(w.c, tp, hp, C.int(n), C.int(pos), (*C.float)(unsafe.Pointer(&out[0])), C.size_t(len(out)), &errbuf[0], C.size_t(len(errbuf)))
	if rc != 0 {
		kind := ErrEval
		if msg := C.GoString(&errbuf[0]); strings.HasPrefix(msg, "the GPU") {
			kind = ErrGPUMemory
		}
		return nil, fmt.Errorf("%w: window [%d, %d) at position %d: %s", kind, w.p.First, w.p.Last, pos, C.GoString(&errbuf[0]))
	}
	return out, nil
}

// GPUMapped says the GPU reads the window's GPU layers from the mapping
// itself (unified memory: Metal on Apple silicon) instead of a copy.
func (w *Window) GPUMapped() bool { return w.mapped }

// KVLen is the number of positions the KV cache holds ([0, KVLen)).
func (w *Window) KVLen() int {
	if w.c == nil {
		return 0
	}
	return int(C.hr_window_kv_used(w.c))
}

// KVTruncate forgets positions >= pos; the next evaluation starts at pos.
func (w *Window) KVTruncate(pos int) {
	if w.c == nil {
		return
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	C.hr_window_kv_truncate(w.c, C.int(max(pos, 0)))
}

// SetAllLogits switches an Output window between the logits of every input
// row (AllLogits) and of the last only, for the evaluations that follow: a
// speculative verification wants every row of a few tokens, a prompt pass
// only its last row (its other rows' output head would cost prompt time).
func (w *Window) SetAllLogits(on bool) {
	if w.c == nil || !w.p.Output || w.p.AllLogits == on {
		return
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	C.hr_window_set_all_logits(w.c, cbool(on))
	w.p.AllLogits = on
}

// RowAttentionRows is the most rows SetRowAttention evaluates row by row.
const RowAttentionRows = C.HR_ROW_ATTN_MAX

// SetRowAttention makes the evaluations that follow of 2 to
// RowAttentionRows rows attend row by row, as one-row evaluations do, so
// that their every row is the bits of evaluating the rows one at a time: a
// speculative verification then picks the tokens the decode steps it
// replaces would pick. (ggml's products over the KV cache take another path
// for several rows than for one, which sums in another order.) Larger
// batches are unchanged.
func (w *Window) SetRowAttention(on bool) {
	if w.c == nil {
		return
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	C.hr_window_set_row_attn(w.c, cbool(on))
}

// KVClear forgets every position.
func (w *Window) KVClear() { w.KVTruncate(0) }

// DeviceMemory is what a window holds on one device.
type DeviceMemory struct {
	KV      int64 // KV cache
	Compute int64 // compute buffers (GPU: reserved for the largest evaluation when the window was made)
	Weights int64 // weights copied there (0 on the CPU: its weights stay in the mapping)
}

// Memory is what the window holds on the CPU and on its GPU.
func (w *Window) Memory() (cpu, gpu DeviceMemory) {
	if w.c == nil {
		return
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	get := func(dev C.int) DeviceMemory {
		return DeviceMemory{
			KV:      int64(C.hr_window_dev_bytes(w.c, dev, 0)),
			Compute: int64(C.hr_window_dev_bytes(w.c, dev, 1)),
			Weights: int64(C.hr_window_dev_bytes(w.c, dev, 2)),
		}
	}
	return get(0), get(1)
}

// GPUFree is what the window's GPU reports free now; 0 without GPU layers.
func (w *Window) GPUFree() int64 {
	if w.c == nil {
		return 0
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	return int64(C.hr_window_gpu_free(w.c))
}

// KVBytes is the size of the window's KV cache (all devices).
func (w *Window) KVBytes() int64 {
	if w.c == nil {
		return 0
	}
	return int64(C.hr_window_kv_bytes(w.c))
}

// ComputeBytes is the size of the window's compute buffers after the largest
// evaluation so far.
func (w *Window) ComputeBytes() int64 {
	if w.c == nil {
		return 0
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	return int64(C.hr_window_compute_bytes(w.c))
}

// WeightRanges returns the page-aligned file byte ranges of the weights this
// window reads from the mapping, merged and sorted; hand them to Prefetch
// and Release. The GPU layers' weights are not among them: they were copied
// to the GPU when the window was made.
func (w *Window) WeightRanges() []ByteRange {
	p := w.p
	if w.mapped { // the GPU reads the mapping: its layers are paged like the CPU's
		p.GPULayers, p.OutputGPU = nil, false
	}
	return w.m.ranges(p)
}

// promptKernelProducts counts the matrix products of the window's current
// graph (its last evaluation's) that run on gemm.c's kernels.
func (w *Window) promptKernelProducts() int {
	if w.c == nil {
		return 0
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	return int(C.hr_window_gemm_products(w.c))
}

// attnKernelProducts counts the attention products over the KV cache of the
// window's current graph that run on attn.c's kernels.
func (w *Window) attnKernelProducts() int {
	if w.c == nil {
		return 0
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	return int(C.hr_window_attn_products(w.c))
}

// GraphSplits is the number of runs of consecutive nodes on one device in the
// window's current graph (its last evaluation's), as ggml's scheduler split
// it; each boundary copies the hidden state between devices. With the GPU
// layers contiguous it is at most 3 (CPU, GPU, CPU): CPU layers never move
// to the GPU (op offload is off). 0 before the first evaluation.
func (w *Window) GraphSplits() int {
	if w.c == nil {
		return 0
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	return int(C.hr_window_graph_splits(w.c))
}
