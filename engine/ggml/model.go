package ggml

/*
#cgo CFLAGS: -std=c11 -I${SRCDIR}/include
#cgo LDFLAGS: -lm
#include <stdlib.h>
#include "engine.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"homering/engine/gguf"

	// ggml core and its CPU backend, compiled by cgo from the pinned ollama
	// module; our C calls its symbols.
	_ "github.com/ollama/ollama/ml/backend/ggml/ggml/src"
)

// ModelInfo is the shape of a model as the engine runs it.
type ModelInfo struct {
	Arch      string // general.architecture: llama, qwen2, qwen3, qwen3moe, gemma2 or gemma3
	NLayer    int
	NEmbd     int
	NHead     int
	NHeadKV   int
	NEmbdHead int // head dimension (attention.key_length)
	NFF       int // feed_forward_length; 0 in a MoE model without one
	// Mixture of experts (qwen3moe): NExpert experts of NFFExp each, of
	// which the router picks NExpertUsed per token; all 0 for dense models.
	NExpert     int
	NExpertUsed int
	NFFExp      int
	// Sliding-window attention (gemma2, gemma3): layer il attends to the
	// last SlidingWindow positions when il % SWAPattern < SWAPattern-1,
	// to all of them otherwise; both 0 when every layer attends to all.
	SlidingWindow int
	SWAPattern    int
	NVocab        int
	NCtxTrain     int
	FileSize      int64
	// TypeName is the type of the first layer's attn_q weight (F32, Q8_0, …).
	TypeName string
	// RopeFreqBase, RopeFreqScale, NormEps are the values the graph uses.
	RopeFreqBase  float32
	RopeFreqScale float32
	NormEps       float32
	// What the file holds. A whole model holds layers [0, NLayer), the input
	// and the output; a weight slice (engine/slice, Slice true) holds what its
	// homering.slice.* keys say, and windows may use only those parts.
	Slice      bool
	HeldLayers []LayerRange // sorted, disjoint
	HasInput   bool         // token_embd: windows with Embed
	HasOutput  bool         // output_norm and output: windows with Output
}

// LayerRange is a half-open range of layers [Start, End).
type LayerRange = gguf.LayerRange

// ByteRange is a range of the model file, in bytes.
type ByteRange struct{ Off, Len int64 }

// Model is one GGUF file mapped read-only into memory. Its windows share the
// mapping, the tensor table and one thread pool. Methods are safe for
// concurrent use; evaluations of the model's windows run one at a time.
type Model struct {
	mu      sync.Mutex // guards everything below and serializes evaluation
	path    string
	data    []byte // the read-only shared mapping of the whole file
	file    *ggufFile
	info    ModelInfo
	hold    gguf.Holding // the parts of the model the file holds
	c       *C.hr_model
	windows int // open windows
	busy    int // Prefetch calls running without the lock
	closed  bool
	threads int
	// expertFreq is a MoE model's routing frequency per layer and expert
	// (SetExpertFrequencies); nil: uniform.
	expertFreq [][]float64
}

func typeInfo(t int) (blck int64, size int, canMatmul, ok bool) {
	var b C.int64_t
	var s C.size_t
	var mm C.int
	if C.hr_type_info(C.int(t), &b, &s, &mm) == 0 {
		return 0, 0, false, false
	}
	return int64(b), int(s), mm != 0, true
}

func typeName(t int) string { return C.GoString(C.hr_type_name(C.int(t))) }

// Open validates the GGUF at path in Go (structure, every tensor inside the
// file, the architecture's tensor shapes) and maps it read-only. Nothing in C
// sees the file before it has passed these checks.
func Open(path string) (*Model, error) {
	if err := cpuRefused(); err != nil {
		return nil, err
	}
	// engine/gguf, the one GGUF parser, checks the header and tensor table
	// against the file size and the architecture's tensor list (one human
	// sentence per problem); fromGGUF and checkTensors below add what
	// ggml's ops need on top.
	g, hold, err := checkWithGGUF(path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ggml: open model: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("ggml: open model: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrNotGGUF, path)
	}
	if st.Size() < 24 {
		return nil, fmt.Errorf("%w: %s has only %d bytes", ErrNotGGUF, path, st.Size())
	}
	if st.Size() > math.MaxInt {
		return nil, fmt.Errorf("%w: %s is too large to map", ErrCorrupt, path)
	}
	data, err := mapFile(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("ggml: map %s: %w", path, err)
	}
	m, err := newModel(path, data, g, hold)
	if err != nil {
		_ = unmapFile(data)
		return nil, err
	}
	return m, nil
}

// newModel loads the model g describes from data, the file's mapping. A
// file that changed size since it was parsed is refused: every tensor
// range was checked against the size parsed.
func newModel(path string, data []byte, g *gguf.File, hold gguf.Holding) (*Model, error) {
	if g.Size != int64(len(data)) {
		return nil, fmt.Errorf("%w: %s changed while it was opened (%d bytes, then %d)", ErrTruncated, path, g.Size, len(data))
	}
	gf, err := fromGGUF(g, int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	hp, info, err := readHParams(gf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	info.FileSize = int64(len(data))
	info.Slice, info.HeldLayers, info.HasInput, info.HasOutput = hold.Slice, hold.Layers, hold.Input, hold.Output
	if err := checkTensors(gf, info, hold); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}

	names := make([]*C.char, len(gf.tensors))
	defer func() {
		for _, n := range names {
			C.free(unsafe.Pointer(n))
		}
	}()
	descs := (*[1 << 28]C.hr_tensor_desc)(C.calloc(C.size_t(max(len(gf.tensors), 1)), C.size_t(unsafe.Sizeof(C.hr_tensor_desc{}))))[:len(gf.tensors):len(gf.tensors)]
	defer C.free(unsafe.Pointer(unsafe.SliceData(descs)))
	for i, t := range gf.tensors {
		names[i] = C.CString(t.name)
		descs[i].name = names[i]
		descs[i]._type = C.int(t.typ)
		descs[i].n_dims = C.int(t.nDims)
		for d := 0; d < 4; d++ {
			descs[i].ne[d] = C.int64_t(t.ne[d])
		}
		descs[i].offset = C.uint64_t(t.offset)
	}
	threads := runtime.NumCPU()
	var errbuf [256]C.char
	cm := C.hr_model_new(unsafe.Pointer(unsafe.SliceData(data)), C.size_t(len(data)), &hp,
		unsafe.SliceData(descs), C.int(len(descs)), C.int(threads), &errbuf[0], C.size_t(len(errbuf)))
	if cm == nil {
		return nil, fmt.Errorf("%w: load %s: %s", ErrEval, path, C.GoString(&errbuf[0]))
	}
	return &Model{path: path, data: data, file: gf, info: info, hold: hold, c: cm, threads: threads}, nil
}

// Close frees the model. All its windows must be closed first.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	if m.windows > 0 || m.busy > 0 {
		return fmt.Errorf("%w (%d open, %d prefetches running)", ErrInUse, m.windows, m.busy)
	}
	m.closed = true
	C.hr_model_free(m.c)
	m.c = nil
	err := unmapFile(m.data)
	m.data = nil
	return err
}

// Info returns the model's shape and what the file holds of it.
func (m *Model) Info() ModelInfo {
	info := m.info
	info.HeldLayers = slices.Clone(info.HeldLayers)
	return info
}

// Path returns the file the model was opened from.
func (m *Model) Path() string { return m.path }

// GPUCount is the number of GPU devices ggml can use in this process. The
// cgo build compiles only ggml's CPU backend; GPUs come from backend
// libraries (libggml-cuda.so, … built with CMake from the same pinned ggml)
// loaded with LoadBackends.
func GPUCount() int { return int(C.hr_gpu_count()) }

// GPURegistered is every GPU device the loaded backends registered, a card
// seen through two libraries (CUDA and Vulkan) counted twice, where
// GPUCount counts it once.
func GPURegistered() int { return int(C.hr_gpu_registered()) }

// LoadBackends loads every ggml backend library in dir and returns the GPU
// count afterwards. `go build` builds none: build/gpu-lib.sh builds them with
// CMake from the same pinned ggml, and engine/gputest loads its Vulkan one.
func LoadBackends(dir string) int {
	cdir := C.CString(dir)
	defer C.free(unsafe.Pointer(cdir))
	C.hr_load_backends(cdir)
	return GPUCount()
}

// LayerRanges returns the page-aligned byte ranges of layer il's weights.
func (m *Model) LayerRanges(il int) []ByteRange {
	return m.ranges(WindowParams{First: il, Last: il + 1})
}

// ranges collects the file ranges of every tensor a window reads, merged and
// widened to whole pages.
func (m *Model) ranges(p WindowParams) []ByteRange {
	var rs []ByteRange
	add := func(name string) {
		if t, ok := m.file.tensor(name); ok {
			rs = append(rs, ByteRange{t.offset, t.size})
		}
	}
	for il := p.First; il < p.Last; il++ {
		if !slices.Contains(p.GPULayers, il) { // else copied to the GPU
			rs = m.appendLayer(rs, il)
		}
	}
	if p.Last > p.First {
		add("rope_freqs.weight")
		add("rope_factors_long.weight")
		add("rope_factors_short.weight")
	}
	if p.Embed {
		add("token_embd.weight")
	}
	if p.Output && !p.OutputGPU {
		add("output_norm.weight")
		add("output.bias")
		if _, ok := m.file.tensor("output.weight"); ok {
			add("output.weight")
		} else {
			add("token_embd.weight")
		}
	}
	return mergeRanges(rs, int64(os.Getpagesize()), int64(len(m.data)))
}

// gpuRanges are the file ranges of the tensors a window copies to its GPU,
// shrunk to the pages no mapped tensor of the window shares: releasing
// those costs the CPU part nothing.
func (m *Model) gpuRanges(p WindowParams) []ByteRange {
	if len(p.GPULayers) == 0 && !p.OutputGPU {
		return nil
	}
	var rs []ByteRange
	for _, il := range p.GPULayers {
		rs = m.appendLayer(rs, il)
	}
	if p.OutputGPU {
		for _, name := range []string{"output_norm.weight", "output.weight", "output.bias"} {
			if t, ok := m.file.tensor(name); ok {
				rs = append(rs, ByteRange{t.offset, t.size})
			}
		}
	}
	page := int64(os.Getpagesize())
	var out []ByteRange
	for _, r := range mergeRanges(rs, 1, int64(len(m.data))) {
		// Whole pages inside r only: the pages at its ends may hold a
		// neighbour the CPU reads.
		start := (r.Off + page - 1) / page * page
		if end := (r.Off + r.Len) / page * page; end > start {
			out = append(out, ByteRange{start, end - start})
		}
	}
	return out
}

// appendLayer appends the file ranges of layer il's tensors (blk.il.*).
func (m *Model) appendLayer(rs []ByteRange, il int) []ByteRange {
	prefix := fmt.Sprintf("blk.%d.", il)
	for _, t := range m.file.tensors {
		if strings.HasPrefix(t.name, prefix) {
			rs = append(rs, ByteRange{t.offset, t.size})
		}
	}
	return rs
}

// releaseLocked is Release with the model's lock held.
func (m *Model) releaseLocked(rs []ByteRange) error {
	for _, r := range rs {
		b, err := m.slice(r)
		if err != nil {
			return err
		}
		if err := release(b); err != nil {
			return fmt.Errorf("ggml: release [%d, +%d): %w", r.Off, r.Len, err)
		}
	}
	return nil
}

func mergeRanges(rs []ByteRange, page, limit int64) []ByteRange {
	for i := range rs {
		end := min((rs[i].Off+rs[i].Len+page-1)/page*page, limit)
		rs[i].Off = rs[i].Off / page * page
		rs[i].Len = end - rs[i].Off
	}
	slices.SortFunc(rs, func(a, b ByteRange) int {
		switch {
		case a.Off < b.Off:
			return -1
		case a.Off > b.Off:
			return 1
		}
		return 0
	})
	var out []ByteRange
	for _, r := range rs {
		if r.Len <= 0 {
			continue
		}
		if n := len(out); n > 0 && r.Off <= out[n-1].Off+out[n-1].Len {
			out[n-1].Len = max(out[n-1].Off+out[n-1].Len, r.Off+r.Len) - out[n-1].Off
			continue
		}
		out = append(out, r)
	}
	return out
}

// slice returns the mapping's bytes of r, or an error when r is outside it.
func (m *Model) slice(r ByteRange) ([]byte, error) {
	if r.Off < 0 || r.Len < 0 || r.Off > int64(len(m.data)) || r.Len > int64(len(m.data))-r.Off {
		return nil, fmt.Errorf("%w: [%d, +%d) of a %d-byte file", ErrBadByteRange, r.Off, r.Len, len(m.data))
	}
	page := int64(os.Getpagesize())
	start := r.Off / page * page
	return m.data[start : r.Off+r.Len], nil
}

// Prefetch reads the ranges into the page cache and maps them, so that the
// next evaluation does not wait for the disk or fault pages in one by one. It
// blocks until done; call it from a goroutine to overlap it with other work.
func (m *Model) Prefetch(rs []ByteRange) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	m.busy++ // keeps the mapping alive without holding the lock
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.busy--
		m.mu.Unlock()
	}()
	for _, r := range rs {
		b, err := m.slice(r)
		if err != nil {
			return err
		}
		if err := prefetch(b); err != nil {
			return fmt.Errorf("ggml: prefetch [%d, +%d): %w", r.Off, r.Len, err)
		}
	}
	return nil
}

// Release unmaps the ranges' pages from this process and asks the kernel to
// reclaim them, so that memory goes to whatever runs next. The weights stay
// valid: the next evaluation that needs them reads them again.
func (m *Model) Release(rs []ByteRange) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	return m.releaseLocked(rs)
}

// fileError keeps engine/gguf's sentence and matches both its kind and ours.
type fileError struct {
	kind error // one of our sentinels
	err  error // a *gguf.FormatError
}

func (e *fileError) Error() string   { return "ggml: " + e.err.Error() }
func (e *fileError) Unwrap() []error { return []error{e.kind, e.err} }

// checkWithGGUF returns what the file holds: the whole model, or the parts
// a weight slice's homering.slice.* keys name (checked against its tensors).
func checkWithGGUF(path string) (*gguf.File, gguf.Holding, error) {
	var none gguf.Holding
	g, err := gguf.Open(path)
	if err != nil {
		return nil, none, ggufError(err, ErrCorrupt)
	}
	arch, _ := g.String("general.architecture")
	if arch != "" && !gguf.Supported(arch) {
		return nil, none, &UnsupportedError{Arch: arch}
	}
	if n, ok := g.Int(arch + ".expert_count"); ok && n > 0 && !gguf.MoE(arch) {
		return nil, none, &UnsupportedError{Arch: arch, Feature: "mixture-of-experts layers"}
	}
	shape, err := g.Shape()
	if err != nil {
		return nil, none, ggufError(err, ErrCorrupt)
	}
	hold, err := g.Holding(shape.NLayer)
	if err != nil {
		return nil, none, ggufError(err, ErrCorrupt)
	}
	if err := g.CheckSliceTensors(shape, hold); err != nil {
		return nil, none, ggufError(err, ErrBadModel)
	}
	return g, hold, nil
}

// ggufError maps an engine/gguf error to our sentinels; other is the kind
// of damaged metadata or tensors at this stage.
func ggufError(err, other error) error {
	kind := other
	switch {
	case errors.Is(err, gguf.ErrNotFound):
		return fmt.Errorf("ggml: open model: %w", err) // matches fs.ErrNotExist
	case errors.Is(err, gguf.ErrNotRegular), errors.Is(err, gguf.ErrNotGGUF):
		kind = ErrNotGGUF
	case errors.Is(err, gguf.ErrTruncated):
		kind = ErrTruncated
	case errors.Is(err, gguf.ErrUnsupported):
		kind = ErrUnsupported
	}
	return &fileError{kind: kind, err: err}
}

// rope scaling types as llama.cpp names them.
// "longrope" (phi3) scales as linear does: its factors are tensors.
var ropeScalingTypes = map[string]bool{"none": true, "linear": true, "yarn": true, "longrope": true}

func readHParams(f *ggufFile) (C.hr_hparams, ModelInfo, error) {
	var hp C.hr_hparams
	var info ModelInfo
	arch, ok := f.string("general.architecture")
	if !ok {
		return hp, info, fmt.Errorf("%w: general.architecture is missing", ErrCorrupt)
	}
	info.Arch = arch
	switch arch {
	case "llama":
		hp.arch = C.HR_ARCH_LLAMA
		hp.rope_type = 0
	case "qwen2":
		hp.arch = C.HR_ARCH_QWEN2
		hp.rope_type = 2 // LLAMA_ROPE_TYPE_NEOX
	case "qwen3":
		hp.arch = C.HR_ARCH_QWEN3
		hp.rope_type = 2
	case "qwen3moe":
		hp.arch = C.HR_ARCH_QWEN3MOE
		hp.rope_type = 2
	case "gemma2":
		hp.arch = C.HR_ARCH_GEMMA2
		hp.rope_type = 2
	case "gemma3":
		hp.arch = C.HR_ARCH_GEMMA3
		hp.rope_type = 2
	case "phi3":
		hp.arch = C.HR_ARCH_PHI3
		hp.rope_type = 2
	case "gpt-oss":
		hp.arch = C.HR_ARCH_GPTOSS
		hp.rope_type = 2
	default:
		return hp, info, &UnsupportedError{Arch: arch}
	}
	p := arch + "."
	need := func(key string) (int, error) {
		if _, isArr := f.kv[p+key].(ggufArray); isArr {
			return 0, &UnsupportedError{Arch: arch, Feature: "per-layer " + key}
		}
		v, ok := f.uint(p + key)
		if !ok || v == 0 || v > 1<<24 {
			return 0, fmt.Errorf("%w: %s%s is missing or out of range", ErrBadModel, p, key)
		}
		return int(v), nil
	}
	opt := func(key string, def int) (int, error) {
		if _, present := f.kv[p+key]; !present {
			return def, nil
		}
		return need(key)
	}
	var err error
	if info.NLayer, err = need("block_count"); err != nil {
		return hp, info, err
	}
	if info.NEmbd, err = need("embedding_length"); err != nil {
		return hp, info, err
	}
	moe := gguf.MoE(arch)
	if moe { // llama.cpp reads it, but only n_ff_exp sizes the experts
		info.NFF, err = opt("feed_forward_length", 0)
	} else {
		info.NFF, err = need("feed_forward_length")
	}
	if err != nil {
		return hp, info, err
	}
	if info.NHead, err = need("attention.head_count"); err != nil {
		return hp, info, err
	}
	if info.NHeadKV, err = opt("attention.head_count_kv", info.NHead); err != nil {
		return hp, info, err
	}
	if info.NCtxTrain, err = need("context_length"); err != nil {
		return hp, info, err
	}
	if n, _ := f.uint(p + "expert_count"); n > 0 && !moe {
		return hp, info, &UnsupportedError{Arch: arch, Feature: "mixture-of-experts layers"}
	}
	if moe {
		if err := readExperts(f, p, &info); err != nil {
			return hp, info, err
		}
	}
	if info.NHead%info.NHeadKV != 0 {
		return hp, info, fmt.Errorf("%w: %d heads are not a multiple of %d KV heads", ErrBadModel, info.NHead, info.NHeadKV)
	}
	if info.NEmbdHead, err = opt("attention.key_length", info.NEmbd/info.NHead); err != nil {
		return hp, info, err
	}
	vlen, err := opt("attention.value_length", info.NEmbd/info.NHead)
	if err != nil {
		return hp, info, err
	}
	if vlen != info.NEmbdHead {
		return hp, info, &UnsupportedError{Arch: arch, Feature: "different key and value head sizes"}
	}
	nRot, err := opt("rope.dimension_count", info.NEmbdHead)
	if err != nil {
		return hp, info, err
	}
	if nRot != info.NEmbdHead {
		return hp, info, fmt.Errorf("%w: rope.dimension_count %d differs from the head size %d", ErrBadModel, nRot, info.NEmbdHead)
	}
	if info.NEmbdHead%2 != 0 {
		return hp, info, fmt.Errorf("%w: odd head size %d", ErrBadModel, info.NEmbdHead)
	}
	eps, ok := f.float(p + "attention.layer_norm_rms_epsilon")
	if !ok || !(eps > 0 && eps < 1) {
		return hp, info, fmt.Errorf("%w: %sattention.layer_norm_rms_epsilon is missing or out of range", ErrBadModel, p)
	}
	// llama_model::load_hparams and the llama_context constructor.
	freqBase := float32(10000)
	if v, ok := f.float(p + "rope.freq_base"); ok {
		freqBase = v
	}
	if !(freqBase > 0) || math.IsInf(float64(freqBase), 0) {
		return hp, info, fmt.Errorf("%w: rope.freq_base %v", ErrBadModel, freqBase)
	}
	scaling := "linear"
	if v, ok := f.string(p + "rope.scaling.type"); ok {
		scaling = v
	}
	if !ropeScalingTypes[scaling] {
		return hp, info, &UnsupportedError{Arch: arch, Feature: "rope scaling " + scaling}
	}
	factor, ok := f.float(p + "rope.scaling.factor")
	if !ok {
		factor, _ = f.float(p + "rope.scale_linear")
	}
	if factor < 0 || math.IsInf(float64(factor), 0) || math.IsNaN(float64(factor)) {
		return hp, info, fmt.Errorf("%w: rope scaling factor %v", ErrBadModel, factor)
	}
	freqScale := float32(1)
	if factor != 0 {
		freqScale = 1 / factor
	}
	if scaling == "none" {
		freqScale = 1
	}
	nCtxOrig := info.NCtxTrain
	if v, ok := f.uint(p + "rope.scaling.original_context_length"); ok && v > 0 && v < 1<<31 {
		nCtxOrig = int(v)
	}
	attnFactor := float32(1)
	extFactor := float32(0)
	if scaling == "yarn" {
		extFactor = 1
		attnFactor = float32(C.hr_yarn_attn_factor(C.float(freqScale)))
	}
	if v, ok := f.float(p + "rope.scaling.attn_factor"); ok {
		attnFactor *= v
	}

	info.NVocab = 0
	if v, ok := f.uint(p + "vocab_size"); ok {
		info.NVocab = int(v)
	}
	if te, ok := f.tensor("token_embd.weight"); ok && info.NVocab == 0 {
		info.NVocab = int(te.ne[1])
	}
	// A weight slice without the input: the output head's rows, else the
	// tokenizer's size (what engine/gguf's Shape uses).
	if out, ok := f.tensor("output.weight"); ok && info.NVocab == 0 {
		info.NVocab = int(out.ne[1])
	}
	if toks, ok := f.kv["tokenizer.ggml.tokens"].(ggufArray); ok && info.NVocab == 0 && toks.n < 1<<31 {
		info.NVocab = int(toks.n)
	}
	if info.NVocab <= 0 {
		return hp, info, fmt.Errorf("%w: vocabulary size unknown (no token_embd.weight)", ErrBadModel)
	}
	for il := 0; il < info.NLayer && info.TypeName == ""; il++ {
		if t, ok := f.tensor(fmt.Sprintf("blk.%d.attn_q.weight", il)); ok {
			info.TypeName = typeName(t.typ)
		} else if t, ok := f.tensor(fmt.Sprintf("blk.%d.attn_qkv.weight", il)); ok {
			info.TypeName = typeName(t.typ)
		}
	}
	info.RopeFreqBase, info.RopeFreqScale, info.NormEps = freqBase, freqScale, eps

	hp.n_layer = C.int(info.NLayer)
	hp.n_embd = C.int(info.NEmbd)
	hp.n_head = C.int(info.NHead)
	hp.n_head_kv = C.int(info.NHeadKV)
	hp.n_embd_head = C.int(info.NEmbdHead)
	hp.n_ff = C.int(info.NFF)
	hp.n_vocab = C.int(info.NVocab)
	hp.n_rot = C.int(nRot)
	hp.norm_eps = C.float(eps)
	hp.n_ctx_orig = C.int(nCtxOrig)
	hp.freq_base = C.float(freqBase)
	hp.freq_scale = C.float(freqScale)
	hp.ext_factor = C.float(extFactor)
	hp.attn_factor = C.float(attnFactor)
	hp.beta_fast = 32
	hp.beta_slow = 1
	hp.kq_scale = C.float(float32(1) / float32(math.Sqrt(float64(info.NEmbdHead))))
	hp.n_expert = C.int(info.NExpert)
	hp.n_expert_used = C.int(info.NExpertUsed)
	hp.n_ff_exp = C.int(info.NFFExp)
	hp.freq_base_swa, hp.freq_scale_swa = hp.freq_base, hp.freq_scale
	switch arch {
	case "gemma2", "gemma3":
		if err := readGemma(f, p, &hp, &info); err != nil {
			return hp, info, err
		}
	case "phi3":
		// llm_build_phi3 scales Q by 1/sqrt(head size) after rope and
		// calls build_attn with kq_scale 1. Its sliding window stays off
		// in llama.cpp (load_hparams: "Phi SWA is currently disabled").
		hp.attn_scale = C.float(float32(1) / float32(math.Sqrt(float64(float32(info.NEmbdHead)))))
		hp.kq_scale = 1
	case "gpt-oss":
		// load_hparams: a required window, every other layer sliding
		// (set_swa_pattern(2)), both layer types with the model's rope.
		window, ok := f.uint(p + "attention.sliding_window")
		if !ok || window == 0 || window > 1<<24 {
			return hp, info, fmt.Errorf("%w: %sattention.sliding_window is missing or out of range", ErrBadModel, p)
		}
		info.SlidingWindow, info.SWAPattern = int(window), 2
		hp.n_swa, hp.swa_pattern = C.int(window), 2
	}
	return hp, info, nil
}

// Gemma's defaults in llama_model::load_hparams at the pinned llama.cpp.
const (
	gemma2Window       = 4096 // attention.sliding_window when absent
	gemma2AttnSoftcap  = 50   // attn_logit_softcapping
	gemma2FinalSoftcap = 30   // final_logit_softcapping
	gemma3SWABase      = 10000
)

// readGemma reads what gemma2 and gemma3 add to the hyper-parameters as
// llama_model::load_hparams does: the sliding window and its layer pattern
// (gemma2: every other layer; gemma3: five of six, and none without a
// window key), gemma3's own rope base for its sliding-window layers, the
// soft-caps, and the Q scale (the 27B models scale by embd/heads, not by
// the head size: llama.cpp tells them by their layer count).
func readGemma(f *ggufFile, p string, hp *C.hr_hparams, info *ModelInfo) error {
	capKey := func(key string, def float32) (float32, error) {
		v, ok := f.float(p + key)
		if !ok {
			return def, nil
		}
		if v < 0 || math.IsInf(float64(v), 0) || math.IsNaN(float64(v)) {
			return 0, fmt.Errorf("%w: %s%s %v is out of range", ErrBadModel, p, key, v)
		}
		return v, nil
	}
	window, hasWindow := f.uint(p + "attention.sliding_window")
	if window > 1<<24 {
		return fmt.Errorf("%w: %sattention.sliding_window %d is out of range", ErrBadModel, p, window)
	}
	hp.freq_base_swa, hp.freq_scale_swa = hp.freq_base, hp.freq_scale
	var err error
	var attnCap, finalCap float32
	bigLayers := 62 // gemma3 27B
	if info.Arch == "gemma2" {
		bigLayers = 46 // gemma2 27B
		if !hasWindow {
			window = gemma2Window
		}
		if window == 0 { // every position masked: llama.cpp's softmax would give NaNs
			return fmt.Errorf("%w: %sattention.sliding_window is 0", ErrBadModel, p)
		}
		info.SlidingWindow, info.SWAPattern = int(window), 2
		if attnCap, err = capKey("attn_logit_softcapping", gemma2AttnSoftcap); err != nil {
			return err
		}
		if finalCap, err = capKey("final_logit_softcapping", gemma2FinalSoftcap); err != nil {
			return err
		}
		if attnCap == 0 || finalCap == 0 { // llama.cpp would divide by 0
			return fmt.Errorf("%w: %s soft-caps must be positive", ErrBadModel, info.Arch)
		}
	} else {
		if window > 0 {
			info.SlidingWindow, info.SWAPattern = int(window), 6
			hp.freq_base_swa, hp.freq_scale_swa = gemma3SWABase, 1
		}
		if finalCap, err = capKey("final_logit_softcapping", 0); err != nil {
			return err
		}
	}
	hp.attn_softcap, hp.final_softcap = C.float(attnCap), C.float(finalCap)
	hp.n_swa, hp.swa_pattern = C.int(info.SlidingWindow), C.int(info.SWAPattern)
	// llama.cpp: f_attention_scale, with kq_scale 1 in build_attn. The
	// division is of integers there too.
	scale := float32(1) / float32(math.Sqrt(float64(float32(info.NEmbdHead))))
	if info.NLayer == bigLayers {
		scale = float32(1) / float32(math.Sqrt(float64(float32(info.NEmbd/info.NHead))))
	}
	hp.attn_scale, hp.kq_scale = C.float(scale), 1
	return nil
}

// readExperts reads a MoE model's expert counts as llama.cpp's
// load_hparams does for qwen3moe, refusing what its graph would assert on
// or what ours does not build (expert groups).
func readExperts(f *ggufFile, p string, info *ModelInfo) error {
	n, _ := f.uint(p + "expert_count")
	used, _ := f.uint(p + "expert_used_count")
	switch {
	case n == 0 || n > C.HR_MAX_EXPERTS:
		return fmt.Errorf("%w: %sexpert_count is %d, want 1 to %d", ErrBadModel, p, n, C.HR_MAX_EXPERTS)
	case used == 0 || used > n:
		return fmt.Errorf("%w: %sexpert_used_count is %d, want 1 to expert_count %d", ErrBadModel, p, used, n)
	case used > C.HR_MAX_EXPERTS_USED:
		return &UnsupportedError{Arch: info.Arch, Feature: fmt.Sprintf("%d experts used per token (at most %d)", used, C.HR_MAX_EXPERTS_USED)}
	}
	if g, _ := f.uint(p + "expert_group_count"); g > 1 {
		return &UnsupportedError{Arch: info.Arch, Feature: "expert groups"}
	}
	info.NExpert, info.NExpertUsed = int(n), int(used)
	info.NFFExp = info.NFF / info.NExpertUsed // llama.cpp's default (qwen3moe)
	if _, ok := f.uint(p + "expert_feed_forward_length"); !ok && info.Arch == "gpt-oss" {
		return fmt.Errorf("%w: %sexpert_feed_forward_length is missing", ErrBadModel, p)
	}
	if v, ok := f.uint(p + "expert_feed_forward_length"); ok && v > 0 {
		if v > 1<<24 {
			return fmt.Errorf("%w: %sexpert_feed_forward_length %d is out of range", ErrBadModel, p, v)
		}
		info.NFFExp = int(v)
	}
	if info.NFFExp == 0 {
		return fmt.Errorf("%w: %sexpert_feed_forward_length is missing and feed_forward_length gives none", ErrBadModel, p)
	}
	return nil
}

// checkTensors verifies that every tensor the graph uses of the parts the
// file holds exists with the shape and type the ggml ops need, so that no
// ggml assertion can fire. NewWindow refuses windows over other parts.
func checkTensors(f *ggufFile, info ModelInfo, hold gguf.Holding) error {
	_, hasOutputWeight := f.tensor("output.weight")
	held := func(name string) bool {
		var il int
		switch {
		case strings.HasPrefix(name, "token_embd."):
			return hold.Input || hold.Output && !hasOutputWeight // tied output head
		case strings.HasPrefix(name, "output_norm."), strings.HasPrefix(name, "output."):
			return hold.Output
		case strings.HasPrefix(name, "blk."):
			if _, err := fmt.Sscanf(name, "blk.%d.", &il); err != nil {
				return false
			}
			return hold.HasLayers(il, il+1)
		}
		return true // rope_freqs: every layer reads it
	}
	e, hd := int64(info.NEmbd), int64(info.NEmbdHead)
	qd, kvd := hd*int64(info.NHead), hd*int64(info.NHeadKV)
	ff, nv := int64(info.NFF), int64(info.NVocab)
	type want struct {
		name     string
		ne0, ne1 int64 // ne1 0: 1-D
		optional bool
		matrix   bool // multiplied with: any type with a CPU kernel; else F32
	}
	// stacked maps an expert weight's name to its third dimension, the
	// experts; every other tensor is at most 2-D.
	stacked := map[string]int64{}
	var ws []want
	ws = append(ws, want{"token_embd.weight", e, nv, false, true},
		want{"output_norm.weight", e, 0, false, false},
		want{"output.weight", e, nv, true, true},
		want{"rope_freqs.weight", hd / 2, 0, true, false})
	if info.Arch == "qwen2" {
		ws = append(ws, want{"output.bias", nv, 0, true, false})
	}
	if info.Arch == "phi3" {
		// LongRoPE: llama.cpp picks one by the context length; without
		// either, rope has no factors.
		ws = append(ws, want{"rope_factors_long.weight", hd / 2, 0, true, false},
			want{"rope_factors_short.weight", hd / 2, 0, true, false})
	}
	for il := 0; il < info.NLayer; il++ {
		b := fmt.Sprintf("blk.%d.", il)
		ws = append(ws, want{b + "attn_norm.weight", e, 0, false, false})
		if info.Arch == "phi3" {
			ws = append(ws, want{b + "attn_qkv.weight", e, qd + 2*kvd, false, true})
		} else {
			ws = append(ws,
				want{b + "attn_q.weight", e, qd, false, true},
				want{b + "attn_k.weight", e, kvd, false, true},
				want{b + "attn_v.weight", e, kvd, false, true})
		}
		ws = append(ws, want{b + "attn_output.weight", qd, e, false, true})
		if info.Arch == "gpt-oss" {
			ws = append(ws, want{b + "post_attention_norm.weight", e, 0, false, false})
		} else {
			ws = append(ws, want{b + "ffn_norm.weight", e, 0, false, false})
		}
		if info.Arch == "phi3" {
			ws = append(ws,
				want{b + "ffn_up.weight", e, 2 * ff, false, true},
				want{b + "ffn_down.weight", ff, e, false, true})
		} else if info.NExpert > 0 {
			ne, fe := int64(info.NExpert), int64(info.NFFExp)
			exps := func(name string, ne0, ne1 int64) want {
				stacked[b+name] = ne
				return want{b + name, ne0, ne1, false, true}
			}
			ws = append(ws,
				want{b + "ffn_gate_inp.weight", e, ne, false, true},
				exps("ffn_gate_exps.weight", e, fe),
				exps("ffn_up_exps.weight", e, fe),
				exps("ffn_down_exps.weight", fe, e))
			if info.Arch == "gpt-oss" {
				ws = append(ws,
					want{b + "ffn_gate_inp.bias", ne, 0, false, false},
					want{b + "ffn_gate_exps.bias", fe, ne, false, false},
					want{b + "ffn_up_exps.bias", fe, ne, false, false},
					want{b + "ffn_down_exps.bias", e, ne, false, false})
			}
		} else {
			ws = append(ws,
				want{b + "ffn_gate.weight", e, ff, false, true},
				want{b + "ffn_up.weight", e, ff, false, true},
				want{b + "ffn_down.weight", ff, e, false, true})
		}
		switch info.Arch {
		case "llama":
			ws = append(ws,
				want{b + "attn_q.bias", qd, 0, true, false},
				want{b + "attn_k.bias", kvd, 0, true, false},
				want{b + "attn_v.bias", kvd, 0, true, false},
				want{b + "attn_output.bias", e, 0, true, false},
				want{b + "ffn_gate.bias", ff, 0, true, false},
				want{b + "ffn_up.bias", ff, 0, true, false},
				want{b + "ffn_down.bias", e, 0, true, false})
		case "qwen2":
			ws = append(ws,
				want{b + "attn_q.bias", qd, 0, false, false},
				want{b + "attn_k.bias", kvd, 0, false, false},
				want{b + "attn_v.bias", kvd, 0, false, false},
				want{b + "attn_output.bias", e, 0, true, false})
		case "qwen3", "qwen3moe":
			ws = append(ws,
				want{b + "attn_q_norm.weight", hd, 0, false, false},
				want{b + "attn_k_norm.weight", hd, 0, false, false})
		case "gemma3":
			ws = append(ws,
				want{b + "attn_q_norm.weight", hd, 0, false, false},
				want{b + "attn_k_norm.weight", hd, 0, false, false})
		case "gpt-oss":
			ws = append(ws,
				want{b + "attn_q.bias", qd, 0, false, false},
				want{b + "attn_k.bias", kvd, 0, false, false},
				want{b + "attn_v.bias", kvd, 0, false, false},
				want{b + "attn_output.bias", e, 0, false, false},
				want{b + "attn_sinks.weight", int64(info.NHead), 0, false, false})
		}
		if info.Arch == "gemma2" || info.Arch == "gemma3" {
			ws = append(ws,
				want{b + "post_attention_norm.weight", e, 0, false, false},
				want{b + "post_ffw_norm.weight", e, 0, false, false})
		}
	}
	for _, w := range ws {
		if !held(w.name) {
			continue
		}
		t, ok := f.tensor(w.name)
		if !ok {
			if w.optional {
				continue
			}
			return fmt.Errorf("%w: tensor %s is missing", ErrBadModel, w.name)
		}
		ne1, ne2 := max(w.ne1, 1), max(stacked[w.name], 1)
		if t.ne[0] != w.ne0 || t.ne[1] != ne1 || t.ne[2] != ne2 || t.ne[3] != 1 {
			if ne2 > 1 {
				return fmt.Errorf("%w: tensor %s has shape %v, want [%d %d %d]", ErrBadModel, w.name, t.ne, w.ne0, ne1, ne2)
			}
			return fmt.Errorf("%w: tensor %s has shape %v, want [%d %d]", ErrBadModel, w.name, t.ne, w.ne0, ne1)
		}
		_, _, canMatmul, _ := typeInfo(t.typ)
		if w.matrix && !canMatmul {
			return fmt.Errorf("%w: tensor %s has type %s, which the CPU cannot multiply", ErrBadModel, w.name, typeName(t.typ))
		}
		if !w.matrix && t.typ != 0 {
			return fmt.Errorf("%w: tensor %s has type %s, want F32", ErrBadModel, w.name, typeName(t.typ))
		}
	}
	return nil
}

// Residency is the fraction of the ranges' pages that are in memory now
// (mincore on Unix; ErrUnsupportedOS elsewhere): what a window's weights
// cost the page cache.
func (m *Model) Residency(rs []ByteRange) (float64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, ErrClosed
	}
	var in, all int64
	for _, r := range rs {
		b, err := m.slice(r)
		if err != nil {
			return 0, err
		}
		n, total, err := resident(b)
		if err != nil {
			return 0, err
		}
		in, all = in+n, all+total
	}
	if all == 0 {
		return 0, nil
	}
	return float64(in) / float64(all), nil
}
