package app

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"homering/engine/gguf"
)

const inspectUsage = `Usage: homering inspect [--json] FILE.gguf

Prints a GGUF model's architecture, hyper-parameters, context length, chat
template presence, tensor types and bytes per layer (for a mixture-of-experts
model also its experts, how many a token uses and the weight bytes a token
reads), after checking the whole
header and tensor table against the file (a cut or damaged file is reported,
not printed).

Flags:
`

// inspectReport is what inspect prints; --json prints it as is.
type inspectReport struct {
	File          string  `json:"file"`
	FileBytes     int64   `json:"file_bytes"`
	GGUFVersion   uint32  `json:"gguf_version"`
	MetadataKeys  int     `json:"metadata_keys"`
	TensorCount   int     `json:"tensors"`
	Alignment     int64   `json:"alignment"`
	DataOffset    int64   `json:"data_offset"`
	Architecture  string  `json:"architecture"`
	Name          string  `json:"name,omitempty"`
	Supported     bool    `json:"supported"`
	Problem       string  `json:"problem,omitempty"` // why the engine would refuse it
	Layers        int     `json:"layers"`
	Embd          int     `json:"embedding_length"`
	FF            int     `json:"feed_forward_length"`
	Heads         int     `json:"heads"`
	KVHeads       int     `json:"kv_heads"`
	HeadDim       int     `json:"head_dim"`
	RopeDims      int     `json:"rope_dims"`
	Vocab         int     `json:"vocab"`
	Context       int     `json:"context_length"`
	RopeFreqBase  float64 `json:"rope_freq_base"`
	RopeScaling   string  `json:"rope_scaling"`
	RopeFreqScale float64 `json:"rope_freq_scale"`
	RopeFreqs     bool    `json:"rope_freqs_tensor"`
	// LongRoPE is phi3's original_context_length when the file has
	// rope_factors_long: llama.cpp ropes with those past it, else the short ones.
	LongRoPE     int     `json:"longrope_original_context,omitempty"`
	RMSEps       float64 `json:"rms_norm_eps"`
	Tokenizer    string  `json:"tokenizer"`
	ChatTemplate bool    `json:"chat_template"`
	TiedOutput   bool    `json:"tied_output"`
	KVBytesToken int64   `json:"kv_bytes_per_token_per_layer_f16"`
	Experts      int     `json:"experts,omitempty"`      // per layer; 0: dense
	ExpertsUsed  int     `json:"experts_used,omitempty"` // routed per token
	ExpertFF     int     `json:"expert_feed_forward_length,omitempty"`
	// Sliding-window attention (gemma2, gemma3): SlidingLayers of the
	// layers see only the last SlidingWindow positions.
	SlidingWindow int `json:"sliding_window,omitempty"`
	SlidingLayers int `json:"sliding_window_layers,omitempty"`
	// ActiveBytes is the weight bytes one token reads: every layer's
	// always-read tensors, ExpertsUsed/Experts of its expert tensors, the
	// output head and one row of token_embd. ModelBytes is all weights.
	ActiveBytes int64         `json:"active_bytes_per_token"`
	ModelBytes  int64         `json:"weight_bytes"`
	Types       []inspectType `json:"tensor_types"`
	Input       inspectPart   `json:"input"`
	Output      inspectPart   `json:"output"`
	Other       inspectPart   `json:"other"`
	LayerParts  []inspectPart `json:"layer_bytes"`
}

type inspectType struct {
	Type    string `json:"type"`
	Tensors int    `json:"tensors"`
	Bytes   int64  `json:"bytes"`
}

type inspectPart struct {
	Bytes       int64            `json:"bytes"`
	ExpertBytes int64            `json:"expert_bytes,omitempty"` // routed experts' share of Bytes
	ByType      map[string]int64 `json:"by_type,omitempty"`
}

// cmdInspect is `homering inspect`.
func cmdInspect(_ context.Context, e env) int {
	fs := newFlags(e, "inspect", inspectUsage)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	// Accept the flag after the file too: homering inspect m.gguf --json.
	files, exit, ok := parseInterspersed(fs, e.args)
	if !ok {
		return exit
	}
	if len(files) != 1 {
		fmt.Fprintln(e.stderr, "homering inspect: give exactly one GGUF file.")
		fs.Usage()
		return 2
	}
	r, err := inspectFile(files[0])
	if err != nil {
		fmt.Fprintln(e.stderr, "homering inspect: "+err.Error())
		return 1
	}
	if *asJSON {
		return reportJSON(e, "inspect", r)
	}
	printInspect(e.stdout, r)
	return 0
}

func inspectFile(path string) (inspectReport, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return inspectReport{}, err
	}
	s, err := f.Shape()
	if err != nil {
		return inspectReport{}, err
	}
	l, err := f.Layout()
	if err != nil {
		return inspectReport{}, err
	}
	r := inspectReport{
		File: path, FileBytes: f.Size, GGUFVersion: f.Version, MetadataKeys: len(f.KV),
		TensorCount: len(f.Tensors), Alignment: f.Alignment, DataOffset: f.DataOffset,
		Architecture: s.Arch, Name: s.Name, Supported: true,
		Layers: s.NLayer, Embd: s.NEmbd, FF: s.NFF, Heads: s.NHead, KVHeads: s.NHeadKV,
		HeadDim: s.HeadDimK, RopeDims: s.NRot, Vocab: s.NVocab, Context: s.NCtxTrain,
		RopeFreqBase: s.RopeFreqBase, RopeScaling: s.RopeScaling, RopeFreqScale: s.RopeFreqScale,
		RopeFreqs: s.HasRopeFreqs, RMSEps: s.RMSEps, Tokenizer: s.TokenizerModel,
		ChatTemplate: s.ChatTemplate, TiedOutput: s.TiedOutput, KVBytesToken: s.KVBytesPerToken(2),
		Input: partOf(l.Input), Output: partOf(l.Output), Other: partOf(l.Other),
		Experts: s.NExpert, ExpertsUsed: s.NExpertUsed, ExpertFF: s.NFFExp,
		SlidingWindow: s.SlidingWindow, SlidingLayers: slidingLayers(s),
	}
	if _, ok := f.Tensor("rope_factors_long.weight"); ok && s.Arch == "phi3" {
		r.LongRoPE = s.RopeOrigCtx
	}
	r.ModelBytes, r.ActiveBytes = activeBytes(s, l)
	if _, err := f.Check(); err != nil {
		r.Supported = false
		r.Problem = err.Error()
	}
	for _, t := range gguf.TypesSorted(l.ByType) {
		r.Types = append(r.Types, inspectType{Type: t.String(), Tensors: l.ByType[t].Count, Bytes: l.ByType[t].Bytes})
	}
	for _, p := range l.Layers {
		r.LayerParts = append(r.LayerParts, partOf(p))
	}
	return r, nil
}

// activeBytes returns the bytes of every weight and the bytes one token
// reads: a layer's expert tensors hold NExpert equal matrices, of which the
// router picks NExpertUsed; token_embd is read one row per token unless it
// is the (tied) output head too.
func activeBytes(s gguf.ModelShape, l gguf.Layout) (all, active int64) {
	all = l.Input.Bytes + l.Output.Bytes + l.Other.Bytes
	active = l.Output.Bytes + l.Other.Bytes
	switch {
	case s.TiedOutput:
		active += l.Input.Bytes
	case s.NVocab > 0:
		active += l.Input.Bytes / int64(s.NVocab)
	}
	for _, p := range l.Layers {
		all += p.Bytes
		active += p.Bytes - p.ExpertBytes
		if s.NExpert > 0 {
			active += p.ExpertBytes / int64(s.NExpert) * int64(s.NExpertUsed)
		}
	}
	return all, active
}

func partOf(p gguf.Part) inspectPart {
	out := inspectPart{Bytes: p.Bytes, ExpertBytes: p.ExpertBytes}
	if len(p.ByType) > 0 {
		out.ByType = map[string]int64{}
		for t, n := range p.ByType {
			out.ByType[t.String()] = n
		}
	}
	return out
}

func printInspect(w io.Writer, r inspectReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	fmt.Fprintf(tw, "file\t%s\n", r.File)
	fmt.Fprintf(tw, "size\t%s bytes (%s)\n", groupDigits(r.FileBytes), sizeText(r.FileBytes))
	fmt.Fprintf(tw, "format\tGGUF v%d, %d metadata keys, %d tensors, alignment %d, data at byte %d\n",
		r.GGUFVersion, r.MetadataKeys, r.TensorCount, r.Alignment, r.DataOffset)
	arch := r.Architecture
	if r.Name != "" {
		arch += " (" + r.Name + ")"
	}
	fmt.Fprintf(tw, "architecture\t%s\n", arch)
	if r.Supported {
		fmt.Fprintf(tw, "supported\tyes\n")
	} else {
		fmt.Fprintf(tw, "supported\tno: %s\n", r.Problem)
	}
	fmt.Fprintf(tw, "layers\t%d\n", r.Layers)
	fmt.Fprintf(tw, "embedding\t%d\n", r.Embd)
	fmt.Fprintf(tw, "feed-forward\t%d\n", r.FF)
	fmt.Fprintf(tw, "heads\t%d (KV heads %d, head dim %d)\n", r.Heads, r.KVHeads, r.HeadDim)
	fmt.Fprintf(tw, "vocabulary\t%d (tokenizer %s)\n", r.Vocab, orNone(r.Tokenizer))
	fmt.Fprintf(tw, "context length\t%d\n", r.Context)
	rope := fmt.Sprintf("%d dims, base %g, no scaling", r.RopeDims, r.RopeFreqBase)
	if r.RopeFreqScale != 1 {
		rope = fmt.Sprintf("%d dims, base %g, %s scaling x%g", r.RopeDims, r.RopeFreqBase, r.RopeScaling, 1/r.RopeFreqScale)
	}
	if r.RopeFreqs {
		rope += ", rope_freqs tensor"
	}
	if r.LongRoPE > 0 {
		rope += fmt.Sprintf(", LongRoPE factors (long for contexts over %d)", r.LongRoPE)
	}
	if r.SlidingLayers > 0 && r.Architecture == "gemma3" {
		rope += "; sliding-window layers base 10000, no scaling"
	}
	fmt.Fprintf(tw, "rope\t%s\n", rope)
	if r.SlidingLayers > 0 {
		fmt.Fprintf(tw, "sliding window\t%d positions on %d of %d layers (the others attend to all)\n", r.SlidingWindow, r.SlidingLayers, r.Layers)
	}
	fmt.Fprintf(tw, "chat template\t%s\n", yes(r.ChatTemplate))
	fmt.Fprintf(tw, "tied output\t%s\n", yes(r.TiedOutput))
	fmt.Fprintf(tw, "KV cache (F16)\t%s bytes per token per layer\n", groupDigits(r.KVBytesToken))
	if r.Experts > 0 {
		fmt.Fprintf(tw, "experts\t%d per layer, %d active per token (feed-forward %d each)\n", r.Experts, r.ExpertsUsed, r.ExpertFF)
		pct := 0.0
		if r.ModelBytes > 0 {
			pct = 100 * float64(r.ActiveBytes) / float64(r.ModelBytes)
		}
		fmt.Fprintf(tw, "active per token\t%s of %s weight bytes (%.0f%%)\n", groupDigits(r.ActiveBytes), groupDigits(r.ModelBytes), pct)
	}
	tw.Flush()

	fmt.Fprintln(w, "\ntensor types")
	for _, t := range r.Types {
		fmt.Fprintf(w, "  %-8s %5d tensors %17s bytes\n", t.Type, t.Tensors, groupDigits(t.Bytes))
	}

	fmt.Fprintln(w, "\nbytes per part")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  input (token_embd)\t%s\n", partText(r.Input))
	// Runs of identical layers print as one line.
	for i := 0; i < len(r.LayerParts); {
		j := i + 1
		for j < len(r.LayerParts) && partText(r.LayerParts[j]) == partText(r.LayerParts[i]) {
			j++
		}
		name := fmt.Sprintf("layer %d", i)
		if j-i > 1 {
			name = fmt.Sprintf("layers %d-%d (each)", i, j-1)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, partText(r.LayerParts[i]))
		i = j
	}
	fmt.Fprintf(tw, "  output (norm + head)\t%s\n", partText(r.Output))
	if r.Other.Bytes > 0 {
		fmt.Fprintf(tw, "  other (rope_freqs, ...)\t%s\n", partText(r.Other))
	}
	tw.Flush()
}

func partText(p inspectPart) string {
	types := make([]string, 0, len(p.ByType))
	for t := range p.ByType {
		types = append(types, t)
	}
	sort.Slice(types, func(i, j int) bool {
		if p.ByType[types[i]] != p.ByType[types[j]] {
			return p.ByType[types[i]] > p.ByType[types[j]]
		}
		return types[i] < types[j]
	})
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = t + " " + groupDigits(p.ByType[t])
	}
	s := groupDigits(p.Bytes) + " bytes"
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	if p.ExpertBytes > 0 {
		s += ", experts " + groupDigits(p.ExpertBytes)
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// groupDigits writes n with thousands separators: 1,185,376.
func groupDigits(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + groupDigits(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// sizeText is n in binary units for people: 1.1 MiB, 943 MiB, 3.9 GiB.
func sizeText(n int64) string {
	const k = 1024
	switch {
	case n < k:
		return fmt.Sprintf("%d B", n)
	case n < k*k:
		return fmt.Sprintf("%.1f KiB", float64(n)/k)
	case n < k*k*k:
		return fmt.Sprintf("%.1f MiB", float64(n)/(k*k))
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(k*k*k))
}

// slidingLayers counts the layers with sliding-window attention, by
// llama.cpp's set_swa_pattern rule.
func slidingLayers(s gguf.ModelShape) int {
	n := 0
	for il := range s.NLayer {
		if s.SWAPattern > 0 && s.SlidingWindow > 0 && il%s.SWAPattern < s.SWAPattern-1 {
			n++
		}
	}
	return n
}
