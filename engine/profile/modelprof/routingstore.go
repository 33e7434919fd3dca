package modelprof

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"homering/engine/gguf"
	"homering/engine/profile/envelope"
)

// The measured routing a device keeps (issue 20 items 4 and 5): what its
// engine counted of a MoE model's routers during real chats
// (ggml.Window.CountExperts), per model, in its config directory next to the
// profile cache and the calibration ratios. The next ring job's prefetch
// warms the experts it shows routed more than average, and the planner
// gives it to Halda as the hot set. A model is its header's SHA-256 (the
// ring's model ID: wire.JobStart.Model), which a worker knows of the
// slices it holds as well as the head of its file.

// RoutingDir is where configDir keeps measured routing: under the profile
// cache's directory (engine/profile.CacheDirName, "profiles"; this package
// cannot import that cgo one), as calibration is (app/agent).
func RoutingDir(configDir string) string {
	return filepath.Join(configDir, "profiles", "routing")
}

// routingField names the entry in a routing file (engine/profile/envelope).
const routingField = "routing"

// routingDecay: a layer whose picks pass it has every count halved, so
// that recent chats weigh as much as old ones and counts never overflow.
const routingDecay = 1 << 24

type routingEntry struct {
	Model  string    `json:"model"` // hex of the header's SHA-256
	Counts [][]int64 `json:"counts"`
}

func routingPath(dir string, model [32]byte) string {
	return filepath.Join(dir, hex.EncodeToString(model[:8])+".json")
}

// LoadRouting returns the routing dir keeps for model: counts per model
// layer and expert, a layer no device window has run all zero. An error
// wrapping os.ErrNotExist when there is none; any other error means the
// file cannot be trusted (the caller starts afresh).
func LoadRouting(dir string, model [32]byte) (*Routing, error) {
	b, err := os.ReadFile(routingPath(dir, model))
	if err != nil {
		return nil, err
	}
	payload, err := envelope.Open(b, routingField)
	if err != nil {
		return nil, err
	}
	var e routingEntry
	if err := json.Unmarshal(payload, &e); err != nil {
		return nil, err
	}
	if e.Model != hex.EncodeToString(model[:]) {
		return nil, fmt.Errorf("the routing file holds model %.16s…", e.Model)
	}
	n := -1
	for i, c := range e.Counts {
		if n >= 0 && len(c) != n {
			return nil, fmt.Errorf("the routing file's layer %d counts %d experts, layer 0 %d", i, len(c), n)
		}
		n = len(c)
		for _, v := range c {
			if v < 0 {
				return nil, fmt.Errorf("the routing file's layer %d has a negative count", i)
			}
		}
	}
	return &Routing{Counts: e.Counts}, nil
}

// AddRouting adds counts of layers [first, first+len(counts)) of a model
// of nLayer layers to what dir keeps for it (an untrusted or differently
// shaped file starts afresh).
func AddRouting(dir string, model [32]byte, nLayer, first int, counts [][]int64) error {
	if len(counts) == 0 {
		return nil
	}
	if first < 0 || first+len(counts) > nLayer {
		return fmt.Errorf("routing counts of layers [%d, %d) of a %d-layer model", first, first+len(counts), nLayer)
	}
	nExp := len(counts[0])
	r, err := LoadRouting(dir, model)
	if err != nil || len(r.Counts) != nLayer || len(r.Counts[0]) != nExp {
		r = &Routing{Counts: make([][]int64, nLayer)}
		for i := range r.Counts {
			r.Counts[i] = make([]int64, nExp)
		}
	}
	for i, c := range counts {
		if len(c) != nExp {
			return fmt.Errorf("routing counts of layer %d count %d experts, not %d", first+i, len(c), nExp)
		}
		row := r.Counts[first+i]
		var sum int64
		for j, v := range c {
			if v < 0 {
				return fmt.Errorf("routing counts of layer %d: a negative count", first+i)
			}
			row[j] += v
			sum += row[j]
		}
		if sum > routingDecay {
			for j := range row {
				row[j] /= 2
			}
		}
	}
	b, err := envelope.Seal(routingField, routingEntry{Model: hex.EncodeToString(model[:]), Counts: r.Counts})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// A reader (the planner, another job) sees the old file or the new.
	tmp, err := os.CreateTemp(dir, ".routing-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), routingPath(dir, model)); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}

// Frequencies are r's counts as ggml.Model.SetExpertFrequencies takes them
// (picks per layer and expert; a layer never counted all zero: uniform).
func (r *Routing) Frequencies() [][]float64 {
	out := make([][]float64, len(r.Counts))
	for i, c := range r.Counts {
		out[i] = make([]float64, len(c))
		for j, v := range c {
			out[i][j] = float64(v)
		}
	}
	return out
}

// Filled is r with every layer never counted given uniform counts (as many
// picks as the mean counted layer), as FromShapeRouted needs every layer:
// a head has counted only its own windows' layers. nil when no layer was
// counted.
func (r *Routing) Filled() *Routing {
	var total int64
	counted := 0
	for _, c := range r.Counts {
		var s int64
		for _, v := range c {
			s += v
		}
		if s > 0 {
			total += s
			counted++
		}
	}
	if counted == 0 {
		return nil
	}
	out := &Routing{Counts: make([][]int64, len(r.Counts))}
	for i, c := range r.Counts {
		var s int64
		for _, v := range c {
			s += v
		}
		out.Counts[i] = append([]int64(nil), c...)
		if s == 0 && len(c) > 0 {
			each := max(total/int64(counted)/int64(len(c)), 1)
			for j := range out.Counts[i] {
				out.Counts[i][j] = each
			}
		}
	}
	return out
}

// Picks is the total of r's counts: what changes when a run adds to it.
func (r *Routing) Picks() int64 {
	var s int64
	for _, c := range r.Counts {
		for _, v := range c {
			s += v
		}
	}
	return s
}

// ModelID is the model's ID in routing files and on the ring: the SHA-256
// of its GGUF header (engine/slice.Server.Model).
func ModelID(path string) ([32]byte, error) {
	g, err := gguf.Open(path)
	if err != nil {
		return [32]byte{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return [32]byte{}, err
	}
	defer f.Close()
	head := make([]byte, g.DataOffset)
	if _, err := f.ReadAt(head, 0); err != nil {
		return [32]byte{}, fmt.Errorf("%s: read its header: %w", path, err)
	}
	return sha256.Sum256(head), nil
}
