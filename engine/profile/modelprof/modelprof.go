package modelprof

import (
	"fmt"
	"strings"

	"homering/engine/gguf"
	"homering/halda"
)

// DefaultContext is n_kv when the caller configures none.
const DefaultContext = 4096

// Batch is the prefill batch the compute buffers are sized for (llama.cpp's
// default n_batch).
const Batch = 512

// FromGGUF reads a GGUF's shape and per-layer bytes into halda's Model,
// planning ctxTokens of KV cache (≤ 0: DefaultContext, or the trained
// context when smaller).
func FromGGUF(path string, ctxTokens int) (halda.Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return halda.Model{}, err
	}
	s, err := f.Shape()
	if err != nil {
		return halda.Model{}, err
	}
	l, err := f.Layout()
	if err != nil {
		return halda.Model{}, err
	}
	return FromShape(s, l, ctxTokens)
}

// TypeKey is the weight-type key halda's maps use.
func TypeKey(t gguf.Type) string { return strings.ToLower(t.String()) }

// elements is how many weights bytes of type t hold.
func elements(t gguf.Type, bytes int64) float64 {
	if t.TypeSize() == 0 {
		return 0
	}
	return float64(bytes) / float64(t.TypeSize()) * float64(t.BlockSize())
}

// FromShape converts a shape and layout (see the package doc).
func FromShape(s gguf.ModelShape, l gguf.Layout, ctxTokens int) (halda.Model, error) {
	if len(l.Layers) != s.NLayer || s.NLayer == 0 {
		return halda.Model{}, fmt.Errorf("the file has tensors for %d layers but its metadata says %d", len(l.Layers), s.NLayer)
	}
	if ctxTokens <= 0 {
		ctxTokens = DefaultContext
		if s.NCtxTrain > 0 && s.NCtxTrain < ctxTokens {
			ctxTokens = s.NCtxTrain
		}
	}
	L := int64(s.NLayer)
	m := halda.Model{
		Name:            s.Name,
		Layers:          s.NLayer,
		LayerBytes:      map[string]int64{},
		LayerFlops:      map[string]float64{},
		OutputFlops:     map[string]float64{},
		InputBytes:      l.Input.Bytes,
		OutputBytes:     l.Output.Bytes,
		Vocab:           s.NVocab,
		Embedding:       s.NEmbd,
		KVBytesPerToken: s.KVBytesPerToken(2),
		ContextTokens:   ctxTokens,
		CPUBufferBytes:  4 * int64(s.NVocab+4*s.NEmbd+2*s.NFF) * Batch,
		GPUBufferBytes:  4 * int64(4*s.NEmbd+2*s.NFF) * Batch,
	}
	if m.Name == "" {
		m.Name = s.Arch
	}
	total := map[gguf.Type]int64{}
	for _, p := range l.Layers {
		for t, b := range p.ByType {
			total[t] += b
		}
	}
	for t, b := range total {
		k := TypeKey(t)
		m.LayerBytes[k] = (b + L - 1) / L
		m.LayerFlops[k] += 2 * elements(t, b) / float64(L)
	}
	m.LayerFlops["f16"] += 2 * float64(ctxTokens) * float64(s.HeadDimK+s.HeadDimV) * float64(s.NHead)
	out := l.Output.ByType
	if s.TiedOutput {
		out = l.Input.ByType
		m.OutputBytes += l.Input.Bytes
	}
	for t, b := range out {
		m.OutputFlops[TypeKey(t)] += 2 * elements(t, b)
	}
	return m, nil
}
