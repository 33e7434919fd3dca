package app

import (
	"homering/engine/profile/modelprof"
	"homering/halda"
)

// modelFromGGUF reads a GGUF's shape and per-layer bytes into halda's Model
// (engine/profile/modelprof, shared with the profiler). halda stays free of
// engine/gguf.
func modelFromGGUF(path string, ctxTokens int) (halda.Model, error) {
	return modelprof.FromGGUF(path, ctxTokens)
}
