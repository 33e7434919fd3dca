package modelprof

import (
	"fmt"
	"math"
	"strings"

	"homering/engine/gguf"
	"homering/halda"
)

// DefaultContext is n_kv when the caller configures none.
const DefaultContext = 4096

// Batch is the prefill batch the compute buffers are sized for (llama.cpp's
// default n_batch).
const Batch = 512

// FromGGUF reads a GGUF's shape and per-layer bytes into halda's Model,
// planning ctxTokens of KV cache (≤ 0: DefaultContext, or the trained
// context when smaller).
func FromGGUF(path string, ctxTokens int) (halda.Model, error) {
	return FromGGUFRouted(path, ctxTokens, nil)
}

// FromGGUFRouted is FromGGUF with a MoE model's measured routing (nil:
// uniform).
func FromGGUFRouted(path string, ctxTokens int, r *Routing) (halda.Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return halda.Model{}, err
	}
	s, err := f.Shape()
	if err != nil {
		return halda.Model{}, err
	}
	l, err := f.Layout()
	if err != nil {
		return halda.Model{}, err
	}
	return FromShapeRouted(s, l, ctxTokens, r)
}

// TypeKey is the weight-type key halda's maps use.
func TypeKey(t gguf.Type) string { return strings.ToLower(t.String()) }

// elements is how many weights bytes of type t hold.
func elements(t gguf.Type, bytes int64) float64 {
	if t.TypeSize() == 0 {
		return 0
	}
	return float64(bytes) / float64(t.TypeSize()) * float64(t.BlockSize())
}

// Routing is a measured routing histogram of a MoE model: Counts[i][e] is
// how many times layer i's router picked expert e.
type Routing struct {
	Counts [][]int64 `json:"counts"`
}

// FromShape converts a shape and layout (see the package doc), assuming
// uniform routing for a MoE model.
func FromShape(s gguf.ModelShape, l gguf.Layout, ctxTokens int) (halda.Model, error) {
	return FromShapeRouted(s, l, ctxTokens, nil)
}

// FromShapeRouted is FromShape with a MoE model's measured routing (nil:
// uniform top-k of n). The histogram must cover every layer and expert.
func FromShapeRouted(s gguf.ModelShape, l gguf.Layout, ctxTokens int, r *Routing) (halda.Model, error) {
	if len(l.Layers) != s.NLayer || s.NLayer == 0 {
		return halda.Model{}, fmt.Errorf("the file has tensors for %d layers but its metadata says %d", len(l.Layers), s.NLayer)
	}
	if ctxTokens <= 0 {
		ctxTokens = DefaultContext
		if s.NCtxTrain > 0 && s.NCtxTrain < ctxTokens {
			ctxTokens = s.NCtxTrain
		}
	}
	L := int64(s.NLayer)
	m := halda.Model{
		Name:            s.Name,
		Layers:          s.NLayer,
		LayerBytes:      map[string]int64{},
		LayerFlops:      map[string]float64{},
		OutputFlops:     map[string]float64{},
		InputBytes:      l.Input.Bytes,
		OutputBytes:     l.Output.Bytes,
		Vocab:           s.NVocab,
		Embedding:       s.NEmbd,
		KVBytesPerToken: s.KVBytesPerToken(2),
		ContextTokens:   ctxTokens,
		CPUBufferBytes:  4 * int64(s.NVocab+4*s.NEmbd+2*s.NFF) * Batch,
		GPUBufferBytes:  4 * int64(4*s.NEmbd+2*s.NFF) * Batch,
	}
	if m.Name == "" {
		m.Name = s.Arch
	}
	total := map[gguf.Type]int64{}
	for _, p := range l.Layers {
		for t, b := range p.ByType {
			total[t] += b
		}
	}
	experts := map[gguf.Type]int64{}
	for _, p := range l.Layers {
		for t, b := range p.ExpertByType {
			experts[t] += b
		}
	}
	// A token runs k of n experts: its FLOPs are k/n of the experts'.
	share := 1.0
	if s.NExpert > 0 {
		share = float64(s.NExpertUsed) / float64(s.NExpert)
	}
	for t, b := range total {
		k := TypeKey(t)
		m.LayerBytes[k] = (b + L - 1) / L
		e := experts[t]
		m.LayerFlops[k] += 2 * (elements(t, b-e) + share*elements(t, e)) / float64(L)
	}
	if s.NExpert > 0 {
		if err := moe(&m, s, l, r); err != nil {
			return halda.Model{}, err
		}
	}
	m.LayerFlops["f16"] += 2 * float64(ctxTokens) * float64(s.HeadDimK+s.HeadDimV) * float64(s.NHead)
	out := l.Output.ByType
	if s.TiedOutput {
		out = l.Input.ByType
		m.OutputBytes += l.Input.Bytes
	}
	for t, b := range out {
		m.OutputFlops[TypeKey(t)] += 2 * elements(t, b)
	}
	return m, nil
}

// moe sets the MoE terms Halda plans with (halda's package doc, "Mixture
// of experts"): per layer, the always-read part a, the experts e (n of
// e/n bytes each, equal shapes) and their routing frequencies p_j (picks
// per token, Σ p_j = k): uniform k/n, or the histogram's. A token reads
// a + Σ p_j·e/n = a + (k/n)·e whatever the skew; the hot set is a plus the
// experts with p_j > k/n; the cold rate ρ is Σ_cold p_j / |cold|. Averaged
// over layers as b is, ρ weighted by cold bytes. The expert slice is one
// expert's bytes in one stack: what a missed expert is read in.
func moe(m *halda.Model, s gguf.ModelShape, l gguf.Layout, r *Routing) error {
	n, k := s.NExpert, s.NExpertUsed
	if n <= 0 || k <= 0 || k > n {
		return fmt.Errorf("the model routes %d of %d experts per token; a MoE model routes 1 to all of its experts", k, n)
	}
	uniform := float64(k) / float64(n)
	if r != nil && len(r.Counts) != len(l.Layers) {
		return fmt.Errorf("the routing histogram covers %d layers but the model has %d", len(r.Counts), len(l.Layers))
	}
	var expert, read, hot, cold, coldRead float64
	var tokens, stacks int64
	for i, p := range l.Layers {
		a, e := float64(p.Bytes-p.ExpertBytes), float64(p.ExpertBytes)
		expert += e
		for _, name := range p.Tensors {
			if strings.HasSuffix(name, "_exps.weight") {
				stacks++
			}
		}
		read += a + uniform*e
		freq := make([]float64, n)
		for j := range freq {
			freq[j] = uniform
		}
		if r != nil {
			c := r.Counts[i]
			if len(c) != n {
				return fmt.Errorf("the routing histogram of layer %d counts %d experts but the model has %d", i, len(c), n)
			}
			var picks int64
			for _, v := range c {
				if v < 0 {
					return fmt.Errorf("the routing histogram of layer %d has a negative count", i)
				}
				picks += v
			}
			if picks == 0 {
				return fmt.Errorf("the routing histogram of layer %d is empty", i)
			}
			// picks = tokens × k, so p_j = c_j·k/picks.
			for j, v := range c {
				freq[j] = float64(v) * float64(k) / float64(picks)
			}
			tokens += picks / int64(k)
		}
		hot += a
		for _, f := range freq {
			// A margin against float noise: uniform counts are not hot.
			if f > uniform*(1+1e-9) {
				hot += e / float64(n)
			} else {
				cold += e / float64(n)
				coldRead += f * e / float64(n)
			}
		}
	}
	L := float64(len(l.Layers))
	m.LayerExpertBytes = int64(math.Ceil(expert / L))
	m.LayerReadBytes = max(int64(math.Ceil(read/L)), 1)
	m.LayerHotBytes = int64(math.Ceil(hot / L))
	if stacks > 0 {
		// One expert's run in one stack (biases are a rounding error).
		m.ExpertSliceBytes = min(int64(expert)/(stacks*int64(n)), m.LayerExpertBytes)
	}
	m.ColdReadRate = uniform
	if cold > 0 {
		// Cold experts never picked still page in on a first pick: a
		// floor keeps ρ in Halda's (0, 1].
		m.ColdReadRate = max(coldRead/cold, 1e-6)
	}
	if r == nil {
		m.Routing = fmt.Sprintf("uniform top-%d of %d: no routing histogram", k, n)
	} else {
		m.Routing = fmt.Sprintf("measured: top-%d of %d over %d tokens a layer", k, n, tokens/int64(len(l.Layers)))
	}
	return nil
}
