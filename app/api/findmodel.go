package api

import (
	"path/filepath"

	"homering/app/agent"
)

// FindModel returns the file of the model the model list shows as name:
// the file's name with or without .gguf, Ollama's NAME:TAG (or its other
// spellings), any case, as the compatible APIs match names (nameKey). It
// scans the model folder and the other stores (agent.ScanModels) in their
// order and takes the first match; ok is false when none is named so.
// homering run -m NAME takes every name the UI shows through it.
func FindModel(home, modelDir, name string) (path string, ok bool) {
	k := nameKey(name)
	if k == "" {
		return "", false
	}
	agent.ScanModels(home, modelDir, func(f agent.ModelFile, _ string) bool {
		if nameKey(f.Name) == k || nameKey(filepath.Base(f.Path)) == k {
			path = f.Path
			return false
		}
		return true
	})
	return path, path != ""
}
