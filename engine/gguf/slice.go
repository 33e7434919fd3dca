package gguf

import (
	"fmt"
	"strconv"
	"strings"
)

// A weight slice (engine/slice) is a GGUF holding only some parts of a
// model: the tensors of some layers, the input (token_embd) and the output
// (output_norm, output). It keeps the source's names and metadata and says
// what it holds in homering.slice.{version,layers,input,output}. Holding
// reads those keys; CheckSliceTensors is CheckTensors restricted to the held
// parts, so a valid partial slice passes and a slice missing a tensor it
// claims does not.

// LayerRange is a half-open range of layers [Start, End).
type LayerRange struct{ Start, End int }

// Holding says which parts of a model a file holds. A whole model holds
// every layer, the input and the output, and Slice is false.
type Holding struct {
	Slice  bool         // the file is a homering weight slice
	Layers []LayerRange // sorted, disjoint, non-empty
	Input  bool         // token_embd
	Output bool         // output_norm, output (or token_embd when tied)
}

// HasLayers reports whether every layer of [first, last) is held.
func (h Holding) HasLayers(first, last int) bool {
	for il := first; il < last; {
		next := -1
		for _, r := range h.Layers {
			if il >= r.Start && il < r.End {
				next = r.End
				break
			}
		}
		if next < 0 {
			return false
		}
		il = next
	}
	return true
}

// String is the held parts for a person: "layers [0, 2) + [3, 4), input".
func (h Holding) String() string {
	var parts []string
	if len(h.Layers) > 0 {
		var rs []string
		for _, r := range h.Layers {
			rs = append(rs, fmt.Sprintf("[%d, %d)", r.Start, r.End))
		}
		parts = append(parts, "layers "+strings.Join(rs, " + "))
	}
	if h.Input {
		parts = append(parts, "the token embedding")
	}
	if h.Output {
		parts = append(parts, "the output head")
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

const sliceVersion = 1

// Holding returns what f holds of a model of nLayer layers: everything when
// it has no homering.slice.* keys, else what those keys say, checked for
// consistency (version 1, ranges sorted, disjoint and within nLayer).
func (f *File) Holding(nLayer int) (Holding, error) {
	isSlice := false
	for _, kv := range f.KV {
		if strings.HasPrefix(kv.Key, "homering.slice.") {
			isSlice = true
			break
		}
	}
	if !isSlice {
		return Holding{Layers: []LayerRange{{0, nLayer}}, Input: true, Output: true}, nil
	}
	h := Holding{Slice: true}
	if v, ok := f.Int("homering.slice.version"); !ok || v != sliceVersion {
		return h, f.metaErr(ErrBadMetadata, "homering.slice.version is %s but this build reads weight slices of version %d", f.keyText("homering.slice.version"), sliceVersion)
	}
	flat, ok := f.Ints("homering.slice.layers")
	if !ok || len(flat)%2 != 0 {
		return h, f.metaErr(ErrBadMetadata, "homering.slice.layers is missing or is not an even-length array of integers")
	}
	prev := 0
	for i := 0; i < len(flat); i += 2 {
		s, e := flat[i], flat[i+1]
		if s < int64(prev) || e <= s || e > int64(nLayer) {
			return h, f.metaErr(ErrBadMetadata, "homering.slice.layers %v are not sorted, disjoint, non-empty ranges within the model's %d layers", flat, nLayer)
		}
		h.Layers = append(h.Layers, LayerRange{int(s), int(e)})
		prev = int(e)
	}
	if h.Input, ok = f.Bool("homering.slice.input"); !ok {
		return h, f.metaErr(ErrBadMetadata, "homering.slice.input is missing or not a bool")
	}
	if h.Output, ok = f.Bool("homering.slice.output"); !ok {
		return h, f.metaErr(ErrBadMetadata, "homering.slice.output is missing or not a bool")
	}
	return h, nil
}

func (f *File) keyText(key string) string {
	if v, ok := f.Value(key); ok {
		return fmt.Sprint(v.Any())
	}
	return "(none)"
}

// HoldsTensor reports whether a tensor named name belongs to a part h
// holds. rope_freqs and phi3's rope_factors_{long,short} belong to every
// layer.
func (h Holding) HoldsTensor(name string) bool {
	switch {
	case strings.HasPrefix(name, "blk."):
		rest := name[4:]
		i := strings.IndexByte(rest, '.')
		if i < 0 {
			return false
		}
		n, err := strconv.Atoi(rest[:i])
		return err == nil && h.HasLayers(n, n+1)
	case strings.HasPrefix(name, "token_embd."):
		return h.Input
	case strings.HasPrefix(name, "output_norm."), strings.HasPrefix(name, "output."):
		return h.Output
	case strings.HasPrefix(name, "rope_freqs."), strings.HasPrefix(name, "rope_factors_"):
		return true
	}
	return false
}

// CheckSliceTensors is CheckTensors for a file that holds only h: every
// required tensor of a held part is present with llama.cpp's shape, no
// tensor of a part it does not hold is there, and a held output of a model
// with tied embeddings (no output.weight) has token_embd to multiply with.
// For a whole model (h.Slice false) it is CheckTensors.
func (f *File) CheckSliceTensors(s ModelShape, h Holding) error {
	if !h.Slice {
		return f.CheckTensors(s)
	}
	if err := f.checkShape(s); err != nil {
		return err
	}
	used := map[string]bool{}
	for _, r := range expectedTensors(s) {
		if !h.HoldsTensor(r.name) {
			continue
		}
		t, ok := f.Tensor(r.name)
		if !ok {
			if r.optional {
				continue
			}
			return f.metaErr(ErrBadTensor, "tensor %s is missing, though the weight slice says it holds %s", r.name, h)
		}
		if !sameShape(t.Shape, r.shape) {
			return f.metaErr(ErrBadTensor, "tensor %s has shape %v where a %s model with these hyper-parameters has %v", r.name, t.Shape, s.Arch, r.shape)
		}
		used[r.name] = true
	}
	if _, tied := f.Tensor("output.weight"); h.Output && !tied {
		t, ok := f.Tensor("token_embd.weight")
		if !ok {
			return f.metaErr(ErrBadTensor, "the weight slice holds the output head of a model with tied embeddings but not token_embd.weight, which that head multiplies with")
		}
		if !sameShape(t.Shape, []int64{int64(s.NEmbd), int64(s.NVocab)}) {
			return f.metaErr(ErrBadTensor, "tensor token_embd.weight has shape %v where a %s model with these hyper-parameters has [%d %d]", t.Shape, s.Arch, s.NEmbd, s.NVocab)
		}
		used["token_embd.weight"] = true
	}
	for _, t := range f.Tensors {
		if !used[t.Name] {
			if (Holding{Layers: []LayerRange{{0, s.NLayer}}, Input: true, Output: true}).HoldsTensor(t.Name) {
				return f.metaErr(ErrBadTensor, "tensor %s is outside what the weight slice says it holds (%s)", t.Name, h)
			}
			return f.metaErr(ErrUnsupported, "has tensor %s, which a %s model does not have", t.Name, s.Arch)
		}
	}
	return nil
}
