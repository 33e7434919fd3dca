package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"homering/app/api/apitype"
	"homering/app/planner"
	"homering/discovery/deviceid"
	"homering/engine/gguf"
	"homering/engine/profile/modelprof"
	"homering/halda"
	"homering/internal/bytesize"
)

// The model list: the GGUFs on this machine, what their headers say and
// whether they fit the devices.

// Models is the model list: every GGUF of the model sources (at most 200)
// with its header's facts and whether it fits the devices (the planner's
// plan for it), the selected model, the folders searched and the devices
// that can take part.
func (b *Agent) Models() (apitype.Models, error) {
	set, err := b.Settings()
	if err != nil {
		return apitype.Models{}, err
	}
	home, _ := os.UserHomeDir()
	out := apitype.Models{Models: []apitype.Model{}, Selected: set.Model, Scanned: []string{}, Devices: b.Planner().Reachable()}
	out.Scanned = ScanModels(home, set.ModelDir, func(f ModelFile, source string) bool {
		m, hm, err := describeModel(f.Path, set.ContextTokens)
		m.Source, m.Name = source, f.Name
		if err != nil {
			m.Fit, m.Error = "unknown", said(err)
			m.Why = "This file cannot be used: " + m.Error
		} else {
			m.Fit, m.Why = b.fitLabel(f.Path, hm, set.ContextTokens)
		}
		out.Models = append(out.Models, m)
		return len(out.Models) < 200
	})
	return out, nil
}

// modelSource is one place GGUFs are found.
type modelSource struct {
	name string
	root string
	scan func(root string) []ModelFile // GGUFs under root
}

// modelSources lists where GGUFs on this machine live: the configured
// folder, then the stores of other apps the person may already use.
func modelSources(home, modelDir string) []modelSource {
	var out []modelSource
	if modelDir != "" {
		out = append(out, modelSource{"folder", modelDir, walkGGUF})
	}
	if home != "" {
		out = append(out,
			modelSource{"ollama", filepath.Join(home, ".ollama", "models"), ollamaModels},
			modelSource{"lmstudio", filepath.Join(home, ".lmstudio", "models"), walkGGUF},
			modelSource{"lmstudio", filepath.Join(home, ".cache", "lm-studio", "models"), walkGGUF},
			modelSource{"huggingface", filepath.Join(home, ".cache", "huggingface", "hub"), walkGGUF},
		)
	}
	return out
}

// ModelFile is one GGUF and the Name to show for it; Real is its Path with
// links resolved (ScanModels fills it).
type ModelFile struct{ Path, Name, Real string }

// ScanModels calls each for every GGUF of the model sources (modelSources)
// once, in their order (a file linked from two places counts once), until
// each returns false, and returns the folders there are to search. The
// model list and the compatible APIs' list (app/api's compatModels) share it.
func ScanModels(home, modelDir string, each func(f ModelFile, source string) bool) []string {
	scanned := []string{}
	seen := map[string]bool{}
	more := true
	for _, src := range modelSources(home, modelDir) {
		if _, err := os.Stat(src.root); err != nil {
			continue
		}
		scanned = append(scanned, src.root)
		for _, f := range src.scan(src.root) {
			if !more {
				break
			}
			real, err := filepath.EvalSymlinks(f.Path)
			if err != nil || seen[real] {
				continue
			}
			seen[real] = true
			f.Real = real
			more = each(f, src.name)
		}
	}
	return scanned
}

// walkGGUF finds *.gguf files under root (symlinks followed at the leaves,
// as the Hugging Face cache links snapshots to blobs). It stops after 2000
// entries deep in a huge tree.
func walkGGUF(root string) []ModelFile {
	var out []ModelFile
	seen := 0
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error { // errors are skipped inside: a scan shows what it can read
		seen++
		if err != nil || seen > 20000 {
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.IsDir() && strings.EqualFold(filepath.Ext(p), ".gguf") {
			out = append(out, ModelFile{Path: p, Name: strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))})
		}
		return nil
	})
	return out
}

// ollamaModels reads Ollama's manifests (manifests/HOST/NS/NAME/TAG, JSON
// with layers) and returns the blob of each model layer, named NAME:TAG
// (NS/NAME:TAG outside the library namespace) as `ollama list` shows it.
func ollamaModels(root string) []ModelFile {
	var out []ModelFile
	manifests := filepath.Join(root, "manifests")
	_ = filepath.WalkDir(manifests, func(p string, d fs.DirEntry, err error) error { // errors are skipped inside
		if err != nil || d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) > 1<<20 {
			return nil
		}
		var m struct {
			Layers []struct {
				MediaType string `json:"mediaType"`
				Digest    string `json:"digest"`
			} `json:"layers"`
		}
		if json.Unmarshal(b, &m) != nil {
			return nil
		}
		for _, l := range m.Layers {
			if l.MediaType == "application/vnd.ollama.image.model" && strings.HasPrefix(l.Digest, "sha256:") {
				blob := filepath.Join(root, "blobs", strings.Replace(l.Digest, ":", "-", 1))
				if _, err := os.Stat(blob); err == nil {
					out = append(out, ModelFile{Path: blob, Name: ollamaName(manifests, p)})
				}
			}
		}
		return nil
	})
	return out
}

// ollamaName turns manifests/HOST/NS/NAME/TAG into NAME:TAG, keeping NS
// when it is not "library".
func ollamaName(manifests, p string) string {
	rel, err := filepath.Rel(manifests, p)
	if err != nil {
		return filepath.Base(p)
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) < 2 {
		return rel
	}
	name := parts[len(parts)-2] + ":" + parts[len(parts)-1]
	if len(parts) >= 4 && parts[len(parts)-3] != "library" {
		name = parts[len(parts)-3] + "/" + name
	}
	return name
}

// describeModel reads a GGUF's header: architecture, layers and dominant
// layer weight type.
func describeModel(path string, ctxTokens int) (apitype.Model, halda.Model, error) {
	m := apitype.Model{Path: path}
	st, err := os.Stat(path)
	if err != nil {
		return m, halda.Model{}, err
	}
	m.Size = st.Size()
	_, s, l, err := readGGUF(path)
	if err != nil {
		return m, halda.Model{}, err
	}
	m.Arch, m.Layers, m.Quant = s.Arch, s.NLayer, dominantType(l)
	hm, err := modelprof.FromShape(s, l, ctxTokens)
	return m, hm, err
}

// readGGUF opens a GGUF and reads its shape and layout: a file for which
// this fails cannot be used (the model list says why).
func readGGUF(path string) (*gguf.File, gguf.ModelShape, gguf.Layout, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, gguf.ModelShape{}, gguf.Layout{}, err
	}
	s, err := f.Shape()
	if err != nil {
		return nil, gguf.ModelShape{}, gguf.Layout{}, err
	}
	l, err := f.Layout()
	return f, s, l, err
}

// dominantType is the weight type holding most bytes of the layers, as
// modelprof names it ("q4_k"); "" when the layers hold none.
func dominantType(l gguf.Layout) string {
	bytes := map[gguf.Type]int64{}
	for _, p := range l.Layers {
		for t, b := range p.ByType {
			bytes[t] += b
		}
	}
	var best gguf.Type
	var bestB int64 = -1
	for t, b := range bytes {
		if b > bestB || (b == bestB && t < best) {
			best, bestB = t, b
		}
	}
	if bestB < 0 {
		return ""
	}
	return modelprof.TypeKey(best)
}

// fitLabel asks the planner whether a model fits the devices: "too big"
// when no plan exists, "tight" when the plan pages weights from disk on
// some device or uses over 80% of the memory it may, else "fits".
func (b *Agent) fitLabel(path string, m halda.Model, ctxTokens int) (string, string) {
	pl, err := b.Planner().Next(planner.Request{Model: path, ContextTokens: ctxTokens, Shape: &m})
	if err != nil {
		if errors.Is(err, halda.ErrOutOfMemory) {
			return "too big", "The devices together do not have the memory for it."
		}
		return "too big", said(err)
	}
	var use, avail int64
	for _, d := range pl.Problem.Devices {
		avail += usable(d)
	}
	for _, a := range pl.Plan.Ring {
		use += a.RAMBytes + a.VRAMBytes
		if a.Case != halda.M4 {
			return "tight", fmt.Sprintf("It runs, but %s reads weights from disk for every token.", b.deviceName(a.ID))
		}
	}
	if float64(use) > 0.8*float64(avail) {
		return "tight", fmt.Sprintf("It needs %s of the %s free on the devices that can take part.", bytesize.Text(use), bytesize.Text(avail))
	}
	on := "on this device alone"
	if len(pl.Plan.Ring) > 1 {
		on = fmt.Sprintf("on %d devices", len(pl.Plan.Ring))
	}
	return "fits", fmt.Sprintf("Predicted %s ms per token %s.", fmtMs(pl.Plan.PredictedMs), on)
}

// deviceName names a device of a plan for a person: its name, else its
// short ID.
func (b *Agent) deviceName(id deviceid.ID) string {
	st := b.Status()
	if id == st.Device.ID {
		return "this device"
	}
	for _, p := range b.Peers().Peers {
		if p.ID == id {
			if p.Name != "" {
				return p.Name
			}
			return p.Short
		}
	}
	return id.Short()
}

func usable(d halda.Device) int64 {
	a := d.RAMAvailable
	if d.MemoryBudget > 0 && d.MemoryBudget < a {
		a = d.MemoryBudget
	}
	return a + d.VRAMAvailable
}

func fmtMs(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// ModelFacts are what the compatible APIs tell of a model file.
type ModelFacts struct {
	Arch, Quant string
	Params      int64 // weights
	CtxTrain    int
}

// ReadModelFacts reads the header facts /api/tags and /api/show give; it
// fails for a file the model list marks unusable.
func ReadModelFacts(path string) (ModelFacts, error) {
	f, s, l, err := readGGUF(path)
	if err != nil {
		return ModelFacts{}, err
	}
	in := ModelFacts{Arch: s.Arch, Quant: dominantType(l), CtxTrain: s.NCtxTrain}
	for _, t := range f.Tensors {
		in.Params += t.Elements()
	}
	return in, nil
}

// ModelInfo is /api/show's model_info: the file's metadata. Without
// verbose, arrays of more than 5 values (the vocabulary) are left empty,
// as Ollama does.
func ModelInfo(path string, verbose bool) (map[string]any, error) {
	info := map[string]any{}
	if path == "" {
		return info, nil
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	for _, kv := range f.KV {
		v := kv.Value
		if v.Type != gguf.Array {
			info[kv.Key] = v.Any()
			continue
		}
		if !verbose && v.Len() > 5 {
			info[kv.Key] = []any{}
			continue
		}
		// Typed slices as JSON arrays ([]uint8 would be base64).
		if ss, ok := v.Strings(); ok {
			info[kv.Key] = ss
		} else if is, ok := v.Ints(); ok {
			info[kv.Key] = is
		} else if fs, ok := v.Floats(); ok {
			info[kv.Key] = fs
		} else {
			info[kv.Key] = []any{}
		}
	}
	return info, nil
}
