package app

import (
	"encoding/json"
	"fmt"
	"os"

	"homering/engine/profile/modelprof"
	"homering/halda"
)

// modelFromGGUF reads a GGUF's shape and per-layer bytes into halda's Model
// (engine/profile/modelprof, shared with the profiler). halda stays free of
// engine/gguf.
func modelFromGGUF(path string, ctxTokens int) (halda.Model, error) {
	return modelprof.FromGGUF(path, ctxTokens)
}

// modelFromGGUFRouted is modelFromGGUF with a MoE model's routing histogram
// from a JSON file ({"counts": [[picks of each expert] per layer]}, as
// bench/profilebench writes it); "" is uniform routing.
func modelFromGGUFRouted(path string, ctxTokens int, routing string) (halda.Model, error) {
	if routing == "" {
		return modelFromGGUF(path, ctxTokens)
	}
	b, err := os.ReadFile(routing)
	if err != nil {
		return halda.Model{}, err
	}
	var r modelprof.Routing
	if err := json.Unmarshal(b, &r); err != nil {
		return halda.Model{}, fmt.Errorf("%s is not a routing histogram ({\"counts\": [[...], ...]}): %w", routing, err)
	}
	return modelprof.FromGGUFRouted(path, ctxTokens, &r)
}
