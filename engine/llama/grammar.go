package llama

/*
#include "llama.h"
*/
import "C"

import (
	"errors"
	"math"
	"sync"

	"github.com/ollama/ollama/llama"
)

// Sentinel errors of grammars.
var (
	ErrSchema  = errors.New("llama: the JSON schema cannot be turned into a grammar; send a JSON object with known types (object, array, string, number, integer, boolean, null), $refs that resolve and patterns that start with ^ and end with $")
	ErrGrammar = errors.New("llama: the grammar does not parse as GBNF (llama.cpp's grammar format) with a root rule")
)

// SchemaGrammar turns a JSON schema into GBNF with llama.cpp's
// json-schema-to-grammar, which reports no reason when it refuses one.
func SchemaGrammar(schema []byte) (string, error) {
	initLlama()
	g := llama.SchemaToGrammar(schema)
	if g == nil {
		return "", ErrSchema
	}
	return string(g), nil
}

// Grammar is llama.cpp's sampler grammar over a model's vocabulary: the
// tokens that may come next, and, while its root rule is incomplete, no
// end-of-generation token. It is engine/head's Constraint. Not safe for
// concurrent use; Close frees it.
//
// llama.cpp aborts the process when a grammar is given a token it refuses,
// so Accept checks the token first: a refused token is an answer, not a
// crash.
type Grammar struct {
	g    *llama.Grammar
	one  []llama.TokenData // Accept's check
	cand []llama.TokenData // Mask's candidates, reused
}

// NewGrammar parses gbnf (its rule "root" is the whole reply) for the
// tokens of v.
func NewGrammar(v *Vocab, gbnf string) (*Grammar, error) {
	if v.model == nil {
		return nil, ErrClosed
	}
	gv := v.grammarVocab()
	g := llama.NewGrammar(gbnf, gv.ids, gv.pieces, gv.eog)
	if g == nil {
		return nil, ErrGrammar
	}
	return &Grammar{g: g, one: make([]llama.TokenData, 1), cand: make([]llama.TokenData, v.n)}, nil
}

// Accept advances the grammar past tok when tok may come next and says
// whether it could; a refused token leaves the grammar as it was. An
// end-of-generation token is allowed once the grammar is complete, and
// then changes nothing.
func (g *Grammar) Accept(tok int32) bool {
	if tok < 0 || int(tok) >= len(g.cand) {
		return false
	}
	g.one[0] = llama.TokenData{ID: tok}
	g.g.Apply(g.one)
	if math.IsInf(float64(g.one[0].Logit), -1) {
		return false
	}
	g.g.Accept(tok)
	return true
}

// Mask sets the logit of every token that may not come next to -Inf.
// logits has one entry per token of the vocabulary (extra entries are
// masked too).
func (g *Grammar) Mask(logits []float32) {
	n := min(len(logits), len(g.cand))
	c := g.cand[:n]
	for i := range c {
		c[i] = llama.TokenData{ID: int32(i), Logit: logits[i]}
	}
	g.g.Apply(c)
	for i := range c {
		logits[i] = c[i].Logit
	}
	for i := n; i < len(logits); i++ {
		logits[i] = float32(math.Inf(-1))
	}
}

// Close frees the grammar.
func (g *Grammar) Close() error {
	g.g.Free()
	return nil
}

// grammarVocab is what a grammar needs of a vocabulary: every token's
// text and the end-of-generation tokens, made once per Vocab (a
// vocabulary of 150k tokens takes that many cgo calls).
type grammarVocab struct {
	ids    []uint32
	pieces []string
	eog    []int32
}

type grammarVocabOnce struct {
	once sync.Once
	gv   grammarVocab
}

func (v *Vocab) grammarVocab() grammarVocab {
	v.gv.once.Do(func() {
		gv := grammarVocab{ids: make([]uint32, v.n), pieces: make([]string, v.n)}
		for i := range v.n {
			tok := int32(i)
			gv.ids[i] = uint32(i)
			switch {
			case v.IsEOG(tok):
				gv.eog = append(gv.eog, tok)
			case bool(C.llama_vocab_is_control(v.v, C.llama_token(tok))):
				// Rendered as text ("<s>", "<|im_start|>") a control token
				// would fit inside a JSON string; as no text it never fits.
			default:
				gv.pieces[i], _ = v.TokenToPiece(tok)
			}
		}
		v.gv.gv = gv
	})
	return v.gv.gv
}
