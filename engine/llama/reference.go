package llama

/*
#include "llama.h"
*/
import "C"

import (
	"errors"
	"fmt"

	"github.com/ollama/ollama/llama"
	"github.com/ollama/ollama/ml"
)

// ReferenceParams configures a Reference.
type ReferenceParams struct {
	NCtx    int // KV cells; llama.cpp rounds it up to a multiple of 256
	Threads int // CPU threads for single-token and batch decodes
	// Batch is the most tokens one llama_decode call takes (n_batch =
	// n_ubatch); longer inputs are split. 0 means min(NCtx, 512), llama.cpp's
	// default micro-batch.
	Batch int
	// GPULayers is llama.cpp's n_gpu_layers: the first GPULayers layers on
	// the first GPU ggml has loaded (n_layer + 1 puts the output head there
	// too); 0 keeps everything on the CPU.
	GPULayers int
}

// ErrContextFull is returned when an evaluation would run past NCtx.
var ErrContextFull = errors.New("llama: the input does not fit in the context")

// Reference is a whole llama.cpp model and context on the CPU (or its first
// GPULayers layers on a GPU): weights mmap'd, flash attention off, F16 KV cache, one sequence. Not safe for
// concurrent use.
type Reference struct {
	model *llama.Model
	ctx   *llama.Context
	batch *llama.Batch
	vocab *Vocab
	p     ReferenceParams
	nCtx  int // as llama.cpp padded it
}

// NewReference loads the model at path into llama.cpp.
func NewReference(path string, p ReferenceParams) (*Reference, error) {
	if p.NCtx <= 0 || p.Threads <= 0 || p.Batch < 0 || p.GPULayers < 0 {
		return nil, fmt.Errorf("llama: reference needs NCtx > 0 and Threads > 0 (got NCtx %d, Threads %d, Batch %d)", p.NCtx, p.Threads, p.Batch)
	}
	if p.Batch == 0 {
		p.Batch = min(p.NCtx, 512)
	}
	m, err := load(path, llama.ModelParams{UseMmap: true, NumGpuLayers: p.GPULayers})
	if err != nil {
		return nil, err
	}
	r := &Reference{model: m, p: p}
	if r.vocab, err = newVocab(m); err != nil {
		llama.FreeModel(m)
		return nil, err
	}
	cp := llama.NewContextParams(p.NCtx, p.Batch, 1, p.Threads, ml.FlashAttentionDisabled, "f16")
	if r.ctx, err = llama.NewContextWithModel(m, cp); err != nil {
		llama.FreeModel(m)
		return nil, fmt.Errorf("llama: create context for %s: %w", path, err)
	}
	r.nCtx = int(C.llama_n_ctx(contextHandle(r.ctx)))
	if r.batch, err = llama.NewBatch(p.Batch, 1, 0); err != nil {
		_ = r.Close() // the batch's error is the one to report
		return nil, err
	}
	return r, nil
}

// Vocab is the model's vocabulary (owned by the Reference).
func (r *Reference) Vocab() *Vocab { return r.vocab }

// NCtx is the context size llama.cpp uses (NCtx rounded up).
func (r *Reference) NCtx() int { return r.nCtx }

// Close frees the context and the model.
func (r *Reference) Close() error {
	if r.batch != nil {
		r.batch.Free()
		r.batch = nil
	}
	if r.ctx != nil {
		C.llama_free(contextHandle(r.ctx)) // the wrapper has no free for contexts
		r.ctx = nil
	}
	if r.model != nil {
		llama.FreeModel(r.model)
		r.model = nil
		r.vocab.model, r.vocab.c, r.vocab.v = nil, nil, nil
	}
	return nil
}

// Logits evaluates tokens at positions pos, pos+1, … (the KV cache must hold
// exactly positions [0, pos)) and returns the logits of every token.
func (r *Reference) Logits(tokens []int32, pos int) ([][]float32, error) {
	return r.eval(tokens, pos, true)
}

// LastLogits is Logits keeping only the last token's logits, which lets
// llama.cpp skip the output head for the others (a prefill).
func (r *Reference) LastLogits(tokens []int32, pos int) ([]float32, error) {
	out, err := r.eval(tokens, pos, false)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

func (r *Reference) eval(tokens []int32, pos int, all bool) ([][]float32, error) {
	if r.ctx == nil {
		return nil, ErrClosed
	}
	if len(tokens) == 0 {
		return nil, errors.New("llama: nothing to evaluate")
	}
	if err := r.vocab.check(tokens...); err != nil {
		return nil, err
	}
	if pos < 0 || pos+len(tokens) > r.nCtx {
		return nil, fmt.Errorf("%w: positions [%d, %d), context %d", ErrContextFull, pos, pos+len(tokens), r.nCtx)
	}
	var out [][]float32
	for start := 0; start < len(tokens); start += r.p.Batch {
		chunk := tokens[start:min(start+r.p.Batch, len(tokens))]
		last := start+len(chunk) == len(tokens)
		r.batch.Clear()
		for i, t := range chunk {
			want := all || (last && i == len(chunk)-1)
			r.batch.Add(int(t), nil, pos+start+i, want, 0)
		}
		if err := r.ctx.Decode(r.batch); err != nil {
			return nil, fmt.Errorf("llama: decode %d tokens at %d: %w", len(chunk), pos+start, err)
		}
		for i := range chunk {
			if all || (last && i == len(chunk)-1) {
				l := r.ctx.GetLogitsIth(i)
				if l == nil {
					return nil, fmt.Errorf("llama: no logits for token %d", start+i)
				}
				out = append(out, l)
			}
		}
	}
	return out, nil
}

// KVClear empties the KV cache.
func (r *Reference) KVClear() {
	if r.ctx != nil {
		r.ctx.KvCacheClear()
	}
}

// KVTruncate forgets every position >= pos.
func (r *Reference) KVTruncate(pos int) {
	if r.ctx != nil {
		r.ctx.KvCacheSeqRm(0, pos, -1)
	}
}
