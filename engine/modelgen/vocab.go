package modelgen

import (
	"fmt"
	"strings"
)

// Token types as llama.cpp's llama_token_type numbers them.
const (
	tokenNormal  int32 = 1
	tokenUnknown int32 = 2
	tokenControl int32 = 3
	tokenByte    int32 = 6
)

// Vocabulary ids every generated model shares.
const (
	UnkID     = 0
	BosID     = 1
	EosID     = 2
	ImStartID = 3
	ImEndID   = 4
	// MinVocab is the smallest vocabulary Generate accepts: the special
	// tokens, the 256 byte tokens and the printable ASCII characters.
	MinVocab = 5 + 256 + 95
)

// spmSpace is SentencePiece's word-boundary marker, U+2581.
const spmSpace = "\u2581"

// commonWords are pieces that make English prompts tokenize into a few
// multi-character tokens, as with a real SentencePiece model.
var commonWords = strings.Fields(`the and was to a of he she it in that his her
you they with for on said but had one day there once upon time little big girl
boy named lily tom ben mom dad loved play wanted saw very happy sad friend
friends went go home tree park ball dog cat bird sun sky water red blue green
what who where when why how is are be not have can will would could this then
so all up down out an as at by from or if we my me your our their them him
hello world good bad new old make made like look looked see run ran jump help
thank thanks please yes no story tell write code model token layer test`)

// Vocab is a SentencePiece vocabulary as GGUF stores it.
type Vocab struct {
	Tokens []string
	Scores []float32
	Types  []int32
}

// BuildVocab returns a vocabulary of exactly n pieces (n >= MinVocab).
func BuildVocab(n int) (Vocab, error) {
	if n < MinVocab {
		return Vocab{}, fmt.Errorf("modelgen: a vocabulary of %d tokens is too small; use at least %d (specials, 256 bytes, ASCII)", n, MinVocab)
	}
	v := Vocab{}
	seen := map[string]bool{}
	add := func(piece string, typ int32) {
		if len(v.Tokens) >= n || seen[piece] {
			return
		}
		seen[piece] = true
		score := float32(0)
		if typ == tokenNormal {
			score = -float32(len(v.Tokens))
		}
		v.Tokens = append(v.Tokens, piece)
		v.Scores = append(v.Scores, score)
		v.Types = append(v.Types, typ)
	}
	add("<unk>", tokenUnknown)
	add("<s>", tokenControl)
	add("</s>", tokenControl)
	add("<|im_start|>", tokenControl)
	add("<|im_end|>", tokenControl)
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b), tokenByte)
	}
	add(spmSpace, tokenNormal)
	for c := byte('!'); c <= '~'; c++ {
		add(string(c), tokenNormal)
	}
	for c := 'a'; c <= 'z'; c++ {
		add(spmSpace+string(c), tokenNormal)
	}
	for _, w := range commonWords {
		for i := 2; i <= len(w); i++ {
			add(spmSpace+w[:i], tokenNormal)
		}
		for i := 2; i <= len(w); i++ {
			add(w[:i], tokenNormal)
		}
	}
	for c := 'A'; c <= 'Z'; c++ {
		add(spmSpace+string(c), tokenNormal)
	}
	for _, p := range []string{",", ".", "!", "?", "'", "\"", ":", ";", "-", "(", ")"} {
		add(spmSpace+p, tokenNormal)
	}
	const letters = "etaoinshrdlcumwfgypbvkjxqz"
	for _, a := range letters {
		for _, b := range letters {
			add(string(a)+string(b), tokenNormal)
		}
	}
	for _, a := range letters {
		for _, b := range letters {
			add(spmSpace+string(a)+string(b), tokenNormal)
		}
	}
	for _, a := range letters {
		for _, b := range letters {
			for _, c := range letters {
				add(string(a)+string(b)+string(c), tokenNormal)
			}
		}
	}
	for i := 0; len(v.Tokens) < n; i++ {
		add(fmt.Sprintf("<pad_%d>", i), tokenNormal)
	}
	return v, nil
}
