package app

import (
	"errors"

	"homering/halda"
)

// errNoGGUFReader: the pure-Go GGUF reader (engine/gguf) has not landed in
// this tree yet, so `plan --model` cannot read a file's shape.
var errNoGGUFReader = errors.New("reading a model's shape from a GGUF file is not in this build yet; give --shape shape.json instead (halda/testdata has Llama-3 8B and 70B shapes)")

// modelFromGGUF reads a GGUF's shape into halda's Model.
func modelFromGGUF(path string, ctxTokens int) (halda.Model, error) {
	_, _ = path, ctxTokens
	return halda.Model{}, errNoGGUFReader
}
