package llama

/*
#include <stdlib.h>
#include "llama.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/ollama/ollama/llama"

	"homering/engine/chat"
)

// Sentinel errors.
var (
	ErrLoad       = errors.New("llama: llama.cpp could not load the model")
	ErrTokenRange = errors.New("llama: token id outside the vocabulary")
	ErrClosed     = errors.New("llama: used after Close")
)

// Vocab is a model's tokenizer, loaded without its weights. Not safe for
// concurrent use with Close; the read methods may run concurrently.
type Vocab struct {
	model *llama.Model          // nil after Close
	c     *C.struct_llama_model // the same model, for the shim
	v     *C.struct_llama_vocab // owned by c
	n     int                   // number of tokens
	tmpl  string                // tokenizer.chat_template, "" if none
	gv    grammarVocabOnce      // the token texts grammars match (grammar.go)
}

// LoadVocab loads the vocabulary (and metadata) of the GGUF at path.
func LoadVocab(path string) (*Vocab, error) {
	m, err := load(path, llama.ModelParams{VocabOnly: true, UseMmap: true})
	if err != nil {
		return nil, err
	}
	v, err := newVocab(m)
	if err != nil {
		llama.FreeModel(m)
		return nil, err
	}
	return v, nil
}

func load(path string, p llama.ModelParams) (*llama.Model, error) {
	initLlama()
	m, err := llama.LoadModelFromFile(path, p)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrLoad, path)
	}
	return m, nil
}

func newVocab(m *llama.Model) (*Vocab, error) {
	c, err := modelHandle(m)
	if err != nil {
		return nil, err
	}
	v := &Vocab{model: m, c: c}
	v.v = (*C.struct_llama_vocab)(unsafe.Pointer(C.llama_model_get_vocab(c)))
	v.n = int(C.llama_vocab_n_tokens(v.v))
	if v.n != m.NumVocab() {
		return nil, fmt.Errorf("llama: shim sees %d tokens, the wrapper %d; update engine/llama's shim", v.n, m.NumVocab())
	}
	if t := C.llama_model_chat_template(c, nil); t != nil {
		v.tmpl = C.GoString(t)
	}
	return v, nil
}

// Close frees the model. The Vocab must not be used afterwards.
func (v *Vocab) Close() error {
	if v.model != nil {
		llama.FreeModel(v.model)
		v.model, v.c, v.v = nil, nil, nil
	}
	return nil
}

// Size is the number of tokens in the vocabulary.
func (v *Vocab) Size() int { return v.n }

// BOS is the beginning-of-sequence token, or -1 if the model has none.
func (v *Vocab) BOS() int32 { return int32(C.llama_vocab_bos(v.v)) }

// EOS is the end-of-sequence token, or -1 if the model has none.
func (v *Vocab) EOS() int32 { return int32(C.llama_vocab_eos(v.v)) }

// AddBOS says whether tokenizing with addSpecial prepends BOS.
func (v *Vocab) AddBOS() bool { return bool(C.llama_vocab_get_add_bos(v.v)) }

// IsEOG says whether tok ends generation (EOS, EOT and the model's other
// end-of-generation tokens). Ids outside the vocabulary are not EOG.
func (v *Vocab) IsEOG(tok int32) bool {
	if !v.valid(tok) {
		return false
	}
	return bool(C.llama_vocab_is_eog(v.v, C.llama_token(tok)))
}

func (v *Vocab) valid(tok int32) bool { return tok >= 0 && int(tok) < v.n }

func (v *Vocab) check(toks ...int32) error {
	if v.model == nil {
		return ErrClosed
	}
	for _, t := range toks {
		if !v.valid(t) {
			return fmt.Errorf("%w: token %d, vocabulary has %d", ErrTokenRange, t, v.n)
		}
	}
	return nil
}

// Tokenize splits text into tokens as llama_tokenize does. addSpecial adds
// BOS/EOS where the model asks for them; parseSpecial turns special-token text
// (e.g. "<|im_start|>") into the special tokens instead of plain text.
func (v *Vocab) Tokenize(text string, addSpecial, parseSpecial bool) ([]int32, error) {
	if v.model == nil {
		return nil, ErrClosed
	}
	ids, err := v.model.Tokenize(text, addSpecial, parseSpecial)
	if err != nil {
		return nil, fmt.Errorf("llama: tokenize %d bytes: %w", len(text), err)
	}
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out, nil
}

// TokenToPiece returns the bytes tok stands for, as llama-cli prints them
// (special tokens rendered as their text, no leading-space stripping). A piece
// may be part of a multi-byte UTF-8 character.
func (v *Vocab) TokenToPiece(tok int32) (string, error) {
	if err := v.check(tok); err != nil {
		return "", err
	}
	buf := make([]byte, 32)
	for {
		n := C.llama_token_to_piece(v.v, C.llama_token(tok), (*C.char)(unsafe.Pointer(&buf[0])), C.int32_t(len(buf)), 0, true)
		if n >= 0 {
			return string(buf[:n]), nil
		}
		buf = make([]byte, -n)
	}
}

// Detokenize turns tokens back into text as llama_detokenize does.
// removeSpecial drops BOS/EOS where the model adds them; unparseSpecial renders
// special tokens as their text (otherwise they render as nothing).
func (v *Vocab) Detokenize(toks []int32, removeSpecial, unparseSpecial bool) (string, error) {
	if err := v.check(toks...); err != nil {
		return "", err
	}
	if len(toks) == 0 {
		return "", nil
	}
	buf := make([]byte, 8*len(toks)+16)
	for {
		n := C.llama_detokenize(v.v, (*C.llama_token)(unsafe.Pointer(&toks[0])), C.int32_t(len(toks)),
			(*C.char)(unsafe.Pointer(&buf[0])), C.int32_t(len(buf)), C.bool(removeSpecial), C.bool(unparseSpecial))
		if n >= 0 {
			return string(buf[:n]), nil
		}
		buf = make([]byte, -n)
	}
}

// ChatTemplate is the GGUF's tokenizer.chat_template, or "" if it has none.
func (v *Vocab) ChatTemplate() string { return v.tmpl }

// Formatter returns the chat formatter for this model: its GGUF template when
// llama.cpp recognises it, else chat.ChatML.
func (v *Vocab) Formatter() chat.Formatter {
	if v.tmpl == "" {
		return chat.ChatML{}
	}
	t := Template{Source: v.tmpl}
	if _, err := t.Format([]chat.Message{{Role: "user", Content: "x"}}, true); err != nil {
		return chat.ChatML{}
	}
	return t
}
