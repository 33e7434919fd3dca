package gguf

import "strconv"

// CheckVocab checks the tokenizer metadata the way llama.cpp's vocabulary
// loader reads it (llama-vocab.cpp load), where a mismatch is not an error
// but a C abort or an out-of-bounds read: the token list must be a string
// array without duplicates (llama.cpp asserts it, after renaming empty
// pieces "[EMPTY_i]"), scores a float32 array and token types an int32 array
// at least as long as the token list (read by index without a length check),
// BPE merges a string array, and the token list as long as token_embd has
// rows.
func (f *File) CheckVocab() error {
	v, ok := f.Value("tokenizer.ggml.tokens")
	if !ok {
		return f.metaErr(ErrBadMetadata, "it has no tokenizer.ggml.tokens, so no text can be encoded")
	}
	toks, ok := v.Strings()
	if !ok {
		return f.metaErr(ErrBadMetadata, "tokenizer.ggml.tokens is %s, not an array of strings", describe(v))
	}
	seen := make(map[string]int, len(toks))
	for i, tok := range toks {
		if tok == "" {
			tok = "[EMPTY_" + strconv.Itoa(i) + "]"
		}
		if j, dup := seen[tok]; dup {
			return f.metaErr(ErrBadMetadata, "token %d and token %d are both %q", j, i, tok)
		}
		seen[tok] = i
	}
	arrays := []struct {
		key  string
		elem ValueType
	}{
		{"tokenizer.ggml.scores", Float32},
		{"tokenizer.ggml.token_type", Int32},
	}
	for _, a := range arrays {
		v, ok := f.Value(a.key)
		if !ok {
			continue
		}
		if v.Type != Array || (v.Elem != a.elem && !(a.elem == Int32 && v.Elem == Uint32)) {
			return f.metaErr(ErrBadMetadata, "%s is %s, not an array of %s", a.key, describe(v), a.elem)
		}
		if v.Len() < len(toks) {
			return f.metaErr(ErrBadMetadata, "%s has %d entries for %d tokens", a.key, v.Len(), len(toks))
		}
	}
	if v, ok := f.Value("tokenizer.ggml.merges"); ok {
		if _, ok := v.Strings(); !ok {
			return f.metaErr(ErrBadMetadata, "tokenizer.ggml.merges is %s, not an array of strings", describe(v))
		}
	}
	if t, ok := f.Tensor("token_embd.weight"); ok && len(t.Shape) >= 2 && t.Shape[1] != int64(len(toks)) {
		return f.metaErr(ErrBadMetadata, "the vocabulary has %d tokens but token_embd.weight has %d rows", len(toks), t.Shape[1])
	}
	return nil
}

// describe names a value's type with its article: "an array of float32", "a uint32".
func describe(v Value) string {
	if v.Type == Array {
		return "an array of " + v.Elem.String()
	}
	return "a " + v.Type.String()
}

// Check is everything the engine needs before handing the file to C code:
// Shape, CheckTensors and CheckVocab, in that order.
func (f *File) Check() (ModelShape, error) {
	s, err := f.Shape()
	if err != nil {
		return s, err
	}
	if err := f.CheckTensors(s); err != nil {
		return s, err
	}
	return s, f.CheckVocab()
}
