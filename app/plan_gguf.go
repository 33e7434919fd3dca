package app

import (
	"fmt"
	"strings"

	"homering/engine/gguf"
	"homering/halda"
)

// defaultPlanContext is the KV cache Halda plans for when neither the flag
// nor the model says otherwise.
const defaultPlanContext = 4096

// planBatch is the batch the compute buffers are sized for (a prefill of
// up to 512 tokens, llama.cpp's default n_batch).
const planBatch = 512

// modelFromGGUF reads a GGUF's shape and per-layer bytes into halda's Model.
// halda stays free of engine/gguf: this is the only place the two meet.
func modelFromGGUF(path string, ctxTokens int) (halda.Model, error) {
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
	return haldaModel(s, l, ctxTokens)
}

// typeKey is the weight-type key halda's maps use: ggml's type name in lower
// case ("q4_k", "q6_k", "f16"), the same keys the profiler measures FLOPS for.
func typeKey(t gguf.Type) string { return strings.ToLower(t.String()) }

// elements is how many weights bytes of type t hold.
func elements(t gguf.Type, bytes int64) float64 {
	if t.TypeSize() == 0 {
		return 0
	}
	return float64(bytes) / float64(t.TypeSize()) * float64(t.BlockSize())
}

// haldaModel converts a shape and layout. Per layer: the bytes by type are
// the average over layers, and the FLOPs of one token are 2 per weight (a
// matrix-vector product) plus attention over the context, 2·n_ctx·(d_k+d_v)
// per head, charged to the F16 KV cache. The output layer is the output
// matrix (or the embedding, when tied). Compute buffers are estimated as
// llama.cpp sizes them for a batch: 4 bytes × (vocab + 4·embd + 2·ffn) ×
// batch on the CPU (it holds the logits), without the vocab on a GPU.
func haldaModel(s gguf.ModelShape, l gguf.Layout, ctxTokens int) (halda.Model, error) {
	if len(l.Layers) != s.NLayer || s.NLayer == 0 {
		return halda.Model{}, fmt.Errorf("the file has tensors for %d layers but its metadata says %d", len(l.Layers), s.NLayer)
	}
	if ctxTokens <= 0 {
		ctxTokens = defaultPlanContext
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
		CPUBufferBytes:  4 * int64(s.NVocab+4*s.NEmbd+2*s.NFF) * planBatch,
		GPUBufferBytes:  4 * int64(4*s.NEmbd+2*s.NFF) * planBatch,
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
		k := typeKey(t)
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
		m.OutputFlops[typeKey(t)] += 2 * elements(t, b)
	}
	return m, nil
}
