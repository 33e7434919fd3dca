package api

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"homering/app/agent"
	"homering/app/api/apitype"
	"homering/app/api/ollama"
)

// compatModel is a model the compatible APIs serve.
type compatModel struct {
	// Name is the name listed (the model list's: the file's name without
	// .gguf, Ollama's NAME:TAG); Path is "" for a Chatter that names no
	// file (tests).
	apitype.ServedModel
	selected bool     // the agent's selected model: chats leave ModelPath empty
	aliases  []string // other names it answers to (the agent's name for it)
	digest   string
	info     ggufInfo
	err      error // the file cannot be used as a model (describe)
}

// nameKey is the form in which two names of a model compare equal: case
// aside, with or without .gguf, and Ollama's spellings of one model
// (registry.ollama.ai/library/llama3.2:latest, llama3.2:latest, llama3.2).
func nameKey(name string) string {
	k := strings.ToLower(strings.TrimSpace(name))
	k = strings.TrimPrefix(k, "registry.ollama.ai/")
	k = strings.TrimPrefix(k, "library/")
	k = strings.TrimSuffix(k, ":latest")
	return strings.TrimSuffix(k, ".gguf")
}

// answers reports whether a request naming asked means m: its listed name,
// its file's name, or an alias, compared by nameKey.
func (m compatModel) answers(asked string) bool {
	k := nameKey(asked)
	if k == "" {
		return false
	}
	names := append([]string{m.Name}, m.aliases...)
	if m.Path != "" {
		names = append(names, filepath.Base(m.Path))
	}
	for _, n := range names {
		if n != "" && nameKey(n) == k {
			return true
		}
	}
	return false
}

// ollama is m as the Ollama translator takes it.
func (m compatModel) ollama() ollama.Model {
	return ollama.Model{Name: m.Name, Size: m.Size, Modified: time.Unix(m.Modified, 0), Digest: m.digest,
		Arch: m.info.arch, Params: m.info.params, Quant: m.info.quant, ContextLength: m.info.ctxTrain}
}

// ggufInfo is what the compatible APIs tell of a model file.
type ggufInfo struct {
	arch, quant string
	params      int64 // weights
	ctxTrain    int
}

// readGGUFInfo reads the agent's ModelFacts of a file.
func readGGUFInfo(path string) (ggufInfo, error) {
	f, err := agent.ReadModelFacts(path)
	return ggufInfo{arch: f.Arch, quant: f.Quant, params: f.Params, ctxTrain: f.CtxTrain}, err
}

// modelCatalog remembers what each model file's header says, by path, size
// and time, so that listing the models or resolving a name reads each
// header once (a header holds the vocabulary: megabytes for a big model).
// The zero value is ready.
type modelCatalog struct {
	mu   sync.Mutex
	seen map[string]seenFile
}

type seenFile struct {
	size int64
	mod  time.Time
	info ggufInfo
	err  error
}

// describe fills m's size, time, digest and header facts from its file, or
// m.err when the file cannot be used (m unchanged without a path).
func (c *modelCatalog) describe(m compatModel) compatModel {
	if m.Path == "" {
		return m
	}
	st, err := os.Stat(m.Path)
	if err != nil {
		m.err = err
		return m
	}
	m.Size, m.Modified = st.Size(), st.ModTime().Unix()
	m.digest = fileDigest(m.Path, st.Size(), st.ModTime())
	c.mu.Lock()
	f, ok := c.seen[m.Path]
	c.mu.Unlock()
	if !ok || f.size != st.Size() || !f.mod.Equal(st.ModTime()) {
		f = seenFile{size: st.Size(), mod: st.ModTime()}
		f.info, f.err = readGGUFInfo(m.Path)
		c.mu.Lock()
		if c.seen == nil {
			c.seen = map[string]seenFile{}
		}
		c.seen[m.Path] = f
		c.mu.Unlock()
	}
	m.info, m.err = f.info, f.err
	return m
}

// maxCompatModels bounds the list, as the model list's 200 do.
const maxCompatModels = 200

// list is the selected model sel (nil: none) first, then every usable GGUF
// of the model sources, by the name the model list shows. The selected
// model takes its scanned name when a source holds it (an Ollama blob's
// NAME:TAG) and answers to the agent's name too. Of two files with one
// name (by nameKey), the first source's is listed: the model folder, then
// Ollama, LM Studio and the Hugging Face cache.
func (c *modelCatalog) list(sel *compatModel, home, modelDir string) []compatModel {
	var out []compatModel
	selReal := ""
	if sel != nil {
		s := c.describe(*sel)
		s.err = nil // the person chose it: the agent says if it cannot load
		out = append(out, s)
		if sel.Path != "" {
			selReal, _ = filepath.EvalSymlinks(sel.Path)
		}
	}
	names := map[string]bool{}
	if sel != nil {
		names[nameKey(sel.Name)] = true
	}
	agent.ScanModels(home, modelDir, func(f agent.ModelFile, _ string) bool {
		if selReal != "" && f.Real == selReal {
			if s := &out[0]; nameKey(f.Name) != nameKey(s.Name) {
				s.aliases = append(s.aliases, s.Name)
				s.Name = f.Name
				names[nameKey(f.Name)] = true
			}
			return true
		}
		if names[nameKey(f.Name)] {
			return true
		}
		m := c.describe(compatModel{ServedModel: apitype.ServedModel{Name: f.Name, Path: f.Path}})
		if m.err != nil {
			return true // the model list says why it cannot be used
		}
		names[nameKey(f.Name)] = true
		out = append(out, m)
		return len(out) < maxCompatModels
	})
	return out
}

// fileDigest identifies a model file for Ollama's digest field: an Ollama
// blob's own SHA-256 (its name), else a hash of the path, size and time;
// hashing a file of many GB on every list would take minutes.
func fileDigest(path string, size int64, mod time.Time) string {
	if d, ok := strings.CutPrefix(filepath.Base(path), "sha256-"); ok && len(d) == 64 {
		return d
	}
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d", path, size, mod.UnixNano())))
	return hex.EncodeToString(h[:])
}

// fileModelName is a model file's name without .gguf.
func fileModelName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

// userHome is where the other apps' model stores are; "" when unknown.
func userHome() string {
	h, _ := os.UserHomeDir()
	return h
}
