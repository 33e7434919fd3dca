package modelgen

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	fsggml "github.com/ollama/ollama/fs/ggml"

	"homering/engine/ggml/quant"
	"homering/engine/gguf"
)

// Config says what model to generate. Zero fields take the defaults that
// Normalize documents.
type Config struct {
	Arch    string // llama, mistral, qwen2, qwen3, qwen3moe, gemma2, gemma3, phi3 or gpt-oss
	Layers  int
	Embd    int
	FF      int // feed_forward_length (qwen3moe: what a dense layer would have)
	Heads   int
	KVHeads int
	HeadDim int // 0: Embd/Heads (qwen3, qwen3moe, the gemmas and gpt-oss may differ; the others must not)
	Vocab   int
	Type    string // one of Types(): a tensor type, or a llama.cpp mix (Q4_K_M, MXFP4_MOE)
	Seed    uint64
	Ctx     int // context_length key; 0: 4096

	// Mixture of experts (qwen3moe and gpt-oss only; 0 takes the
	// default): Experts experts (8) of ExpertFF (FF/ExpertsUsed,
	// llama.cpp's default rule), ExpertsUsed (2) routed per token.
	Experts     int
	ExpertsUsed int
	ExpertFF    int

	// Gemma (gemma2, gemma3) and gpt-oss: SlidingWindow is
	// attention.sliding_window (0 takes 16, small enough for a short test
	// to slide; gemma3 then has a global layer every sixth, gemma2 and
	// gpt-oss every second). FinalSoftcap > 0 writes final_logit_softcapping (gemma2's
	// default is 30, gemma3's none); gemma2 also gets its attention
	// soft-cap of 50. Gemma2's output head is always token_embd.
	SlidingWindow int
	FinalSoftcap  float64

	// RopeFreqs adds a Llama 3.1 style rope_freqs.weight tensor (llama and
	// mistral only) and sets rope.freq_base to 500000.
	RopeFreqs bool
	// RopeScaleLinear > 0 writes rope.scaling.type=linear and
	// rope.scaling.factor (llama.cpp then divides positions by it).
	RopeScaleLinear float64
	// RopeOrigCtx (phi3 only) is rope.scaling.original_context_length
	// (0: Ctx/32, as Phi-3-mini-128k's 4096 of 131072). llama.cpp ropes
	// with rope_factors_long when its context (n_ctx rounded up to 256)
	// exceeds it, else rope_factors_short; with Ctx > RopeOrigCtx the file
	// also gets Phi-3's rope.scaling.attn_factor.
	RopeOrigCtx int
	// TiedOutput leaves out output.weight: the output head reuses
	// token_embd.weight, as Llama 3.2 1B and Qwen2.5 0.5B do.
	TiedOutput bool
	// ChatTemplate, when not "", is the tokenizer.chat_template written
	// instead of the architecture's (a template family's, for tests of
	// what the compatible APIs do with it, such as tool calling).
	ChatTemplate string
	// QuietFrom > 0 scales the output projections (attn_output, ffn_down)
	// of layers QuietFrom and up by QuietScale, so that those layers
	// barely change the residual stream: the model then nearly agrees
	// with the same seed's model of QuietFrom layers, whose tensors are
	// its first layers' (every tensor is seeded by its name), the
	// controlled target/draft pair of speculative decoding's benchmark.
	// QuietScale 0 makes the two agree exactly.
	QuietFrom  int
	QuietScale float64
}

// GeneratorVersion is written to general.description with the seed; bump it
// whenever the same Config would give different bytes, so that set-up
// (gen-model --keep, see Current) regenerates old files.
const GeneratorVersion = 2

// ErrConfig is wrapped by every error about a Config that cannot be generated.
var ErrConfig = errors.New("modelgen: bad model configuration")

// fileType is what --type names: every 2-D weight in one ggml type (tt), or
// a llama.cpp mix (layout), and the llama_ftype general.file_type says.
type fileType struct {
	tt       gguf.Type
	layout   func(c Config, name string, shape []uint64) gguf.Type // nil: every weight is tt
	fileType uint32
}

// types maps a type name to what Generate writes. A single-type file is what
// llama-quantize --pure writes (its file_type the closest llama_ftype);
// Q4_K_M and MXFP4_MOE follow llama-quant.cpp's per-tensor rules.
var types = map[string]fileType{
	"F32":       {tt: gguf.TypeF32, fileType: 0},
	"F16":       {tt: gguf.TypeF16, fileType: 1},
	"BF16":      {tt: gguf.TypeBF16, fileType: 32},
	"Q8_0":      {tt: gguf.TypeQ8_0, fileType: 7},
	"Q6_K":      {tt: gguf.TypeQ6_K, fileType: 18},
	"Q5_K":      {tt: gguf.TypeQ5_K, fileType: 16}, // LLAMA_FTYPE_MOSTLY_Q5_K_S
	"Q4_K":      {tt: gguf.TypeQ4_K, fileType: 15}, // LLAMA_FTYPE_MOSTLY_Q4_K_M (kept: changing it would change every Q4_K file's bytes)
	"Q3_K":      {tt: gguf.TypeQ3_K, fileType: 11}, // LLAMA_FTYPE_MOSTLY_Q3_K_S
	"Q2_K":      {tt: gguf.TypeQ2_K, fileType: 10},
	"Q5_0":      {tt: gguf.TypeQ5_0, fileType: 8},
	"Q4_0":      {tt: gguf.TypeQ4_0, fileType: 2},
	"IQ4_XS":    {tt: gguf.TypeIQ4_XS, fileType: 30},
	"IQ4_NL":    {tt: gguf.TypeIQ4_NL, fileType: 25},
	"IQ3_XXS":   {tt: gguf.TypeIQ3_XXS, fileType: 23},
	"IQ3_S":     {tt: gguf.TypeIQ3_S, fileType: 26},
	"IQ2_XXS":   {tt: gguf.TypeIQ2_XXS, fileType: 19},
	"IQ2_XS":    {tt: gguf.TypeIQ2_XS, fileType: 20},
	"IQ1_S":     {tt: gguf.TypeIQ1_S, fileType: 24},
	"MXFP4":     {tt: gguf.TypeMXFP4, fileType: 38},
	"Q4_K_M":    {tt: gguf.TypeQ4_K, layout: q4KMType, fileType: 15},
	"MXFP4_MOE": {tt: gguf.TypeMXFP4, layout: mxfp4MoEType, fileType: 38},
}

// Types lists the type names Generate writes, in a stable order: the
// single types, then the mixes.
func Types() []string {
	return []string{
		"F32", "F16", "BF16", "Q8_0", "Q6_K", "Q5_K", "Q4_K", "Q3_K", "Q2_K", "Q5_0", "Q4_0",
		"IQ4_XS", "IQ4_NL", "IQ3_XXS", "IQ3_S", "IQ2_XXS", "IQ2_XS", "IQ1_S", "MXFP4",
		"Q4_K_M", "MXFP4_MOE",
	}
}

// useMoreBits is llama-quant.cpp's use_more_bits: the layers a *_M mix
// gives more bits (the first and last eighth, and every third between).
func useMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// layerOf is the block number of a tensor name ("blk.3.attn_v.weight": 3),
// or -1.
func layerOf(name string) int {
	var n int
	if _, err := fmt.Sscanf(name, "blk.%d.", &n); err != nil {
		return -1
	}
	return n
}

// q4KMType is llama_tensor_get_type for LLAMA_FTYPE_MOSTLY_Q4_K_M at the
// pinned llama.cpp (llama-quant.cpp), for the tensors Generate writes and
// without an imatrix: the head (token_embd when tied) Q6_K; attn_v and
// ffn_down (ffn_down_exps too) Q6_K in the use_more_bits layers; with
// exactly 8 experts attn_v and attn_k Q8_0 and attn_output Q5_K; the rest
// Q4_K. llama.cpp counts attn_v and ffn_down tensors in its loader's order
// (by layer), which is the layer number here. Left out: the 70B rule
// (attn_v Q5_K at 80 layers), Falcon's and the fused-QKV rules (no such
// model here), and the fallback for rows that are not whole 256-blocks
// (Normalize refuses those instead).
func q4KMType(c Config, name string, _ []uint64) gguf.Type {
	il := layerOf(name)
	switch {
	case name == "output.weight" || (c.TiedOutput && name == "token_embd.weight"):
		return gguf.TypeQ6_K
	case strings.HasSuffix(name, ".attn_v.weight"):
		if c.Experts == 8 {
			return gguf.TypeQ8_0
		}
		if useMoreBits(il, c.Layers) {
			return gguf.TypeQ6_K
		}
	case strings.HasSuffix(name, ".attn_k.weight"):
		if c.Experts == 8 {
			return gguf.TypeQ8_0
		}
	case strings.Contains(name, ".ffn_down"):
		if useMoreBits(il, c.Layers) {
			return gguf.TypeQ6_K
		}
	case strings.HasSuffix(name, ".attn_output.weight"):
		if c.Experts == 8 {
			return gguf.TypeQ5_K
		}
	}
	return gguf.TypeQ4_K
}

// mxfp4MoEType is llama_tensor_get_type for LLAMA_FTYPE_MOSTLY_MXFP4_MOE
// (gpt-oss's layout): the experts' 3-D stacks MXFP4, every other weight
// (head and embedding included) Q8_0.
func mxfp4MoEType(_ Config, _ string, shape []uint64) gguf.Type {
	if len(shape) > 2 && shape[2] > 1 {
		return gguf.TypeMXFP4
	}
	return gguf.TypeQ8_0
}

// Arches lists the families Generate writes.
func Arches() []string {
	return []string{"llama", "mistral", "qwen2", "qwen3", "qwen3moe", "gemma2", "gemma3", "phi3", "gpt-oss"}
}

// moe reports whether arch routes its FFN to experts.
func moe(arch string) bool { return arch == "qwen3moe" || arch == "gpt-oss" }

// gemma reports whether arch is one of the Gemma families.
func gemma(arch string) bool { return arch == "gemma2" || arch == "gemma3" }

// Gemma2's soft-caps as Google's configs set them.
const (
	gemma2AttnSoftcap  = 50
	gemma2FinalSoftcap = 30
)

func configErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...))
}

// Normalize fills defaults and checks that llama.cpp could load the result.
func (c Config) Normalize() (Config, error) {
	if c.Ctx == 0 {
		c.Ctx = 4096
	}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if c.Type == "" {
		c.Type = "F32"
	}
	if c.QuietFrom < 0 || c.QuietScale < 0 || c.QuietFrom > 0 && c.QuietFrom >= c.Layers {
		return c, configErr("quiet layers from %d (scale %g) of %d: give a first quiet layer below the layer count and a scale >= 0", c.QuietFrom, c.QuietScale, c.Layers)
	}
	switch c.Arch {
	case "llama", "mistral", "qwen2", "qwen3", "qwen3moe", "gemma2", "gemma3", "phi3", "gpt-oss":
	default:
		return c, configErr("architecture %q is not one of %s", c.Arch, strings.Join(Arches(), ", "))
	}
	if moe(c.Arch) {
		if c.Experts == 0 {
			c.Experts = 8
		}
		if c.ExpertsUsed == 0 {
			c.ExpertsUsed = min(2, c.Experts)
		}
		if c.ExpertsUsed > 0 && c.ExpertFF == 0 {
			c.ExpertFF = c.FF / c.ExpertsUsed
		}
		switch {
		case c.Experts < 1 || c.Experts > gguf.MaxExperts:
			return c, configErr("experts %d must be 1 to %d", c.Experts, gguf.MaxExperts)
		case c.ExpertsUsed < 1 || c.ExpertsUsed > c.Experts:
			return c, configErr("experts-used %d must be 1 to the %d experts", c.ExpertsUsed, c.Experts)
		case c.ExpertFF <= 0:
			return c, configErr("expert-ff must be positive, not %d", c.ExpertFF)
		}
	} else if c.Experts != 0 || c.ExpertsUsed != 0 || c.ExpertFF != 0 {
		return c, configErr("experts are a qwen3moe and gpt-oss feature, not %s", c.Arch)
	}
	if c.Arch == "phi3" {
		if c.RopeOrigCtx == 0 {
			c.RopeOrigCtx = max(1, c.Ctx/32)
		}
		if c.RopeOrigCtx < 0 || c.RopeOrigCtx > c.Ctx {
			return c, configErr("rope-orig-ctx %d must be 1 to the context length %d", c.RopeOrigCtx, c.Ctx)
		}
	} else if c.RopeOrigCtx != 0 {
		return c, configErr("rope-orig-ctx is a phi3 feature, not %s", c.Arch)
	}
	if c.Arch == "gpt-oss" {
		if c.RopeScaleLinear != 0 {
			return c, configErr("gpt-oss ropes with YaRN; rope-scale-linear does not apply")
		}
		if c.SlidingWindow == 0 {
			c.SlidingWindow = 16
		}
		if c.SlidingWindow < 0 || c.FinalSoftcap != 0 {
			return c, configErr("gpt-oss takes a positive sliding-window (not %d) and no final-softcap", c.SlidingWindow)
		}
	} else if gemma(c.Arch) {
		if c.SlidingWindow == 0 {
			c.SlidingWindow = 16
		}
		if c.Arch == "gemma2" {
			c.TiedOutput = true // llama.cpp reads no output.weight for gemma2
			if c.FinalSoftcap == 0 {
				c.FinalSoftcap = gemma2FinalSoftcap
			}
		}
		if c.SlidingWindow < 0 || c.FinalSoftcap < 0 || math.IsNaN(c.FinalSoftcap) || math.IsInf(c.FinalSoftcap, 0) {
			return c, configErr("sliding-window %d and final-softcap %v must be positive", c.SlidingWindow, c.FinalSoftcap)
		}
	} else if c.SlidingWindow != 0 || c.FinalSoftcap != 0 {
		return c, configErr("sliding-window and final-softcap are gemma2/gemma3 (sliding-window also gpt-oss) features, not %s", c.Arch)
	}
	if _, ok := types[c.Type]; !ok {
		return c, configErr("type %q is not one of %s", c.Type, strings.Join(Types(), ", "))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"layers", c.Layers}, {"embd", c.Embd}, {"ff", c.FF}, {"heads", c.Heads}, {"kv-heads", c.KVHeads}, {"vocab", c.Vocab}, {"ctx", c.Ctx}} {
		if f.v <= 0 {
			return c, configErr("%s must be positive, not %d", f.name, f.v)
		}
	}
	if c.Embd%c.Heads != 0 && c.HeadDim == 0 {
		return c, configErr("embd %d is not a multiple of heads %d", c.Embd, c.Heads)
	}
	if c.HeadDim == 0 {
		c.HeadDim = c.Embd / c.Heads
	}
	if c.HeadDim != c.Embd/c.Heads || c.Embd%c.Heads != 0 {
		if c.Arch != "qwen3" && c.Arch != "qwen3moe" && !gemma(c.Arch) && c.Arch != "gpt-oss" {
			return c, configErr("head-dim %d must equal embd/heads for %s (only qwen3, qwen3moe, the gemmas and gpt-oss may differ)", c.HeadDim, c.Arch)
		}
	}
	if c.HeadDim%2 != 0 {
		return c, configErr("head-dim %d must be even for rope", c.HeadDim)
	}
	if c.Heads%c.KVHeads != 0 {
		return c, configErr("heads %d is not a multiple of kv-heads %d", c.Heads, c.KVHeads)
	}
	if c.Vocab < MinVocab {
		return c, configErr("vocab %d is below the minimum of %d", c.Vocab, MinVocab)
	}
	if c.RopeFreqs && c.Arch != "llama" && c.Arch != "mistral" {
		return c, configErr("rope-freqs is a llama/mistral feature, not %s", c.Arch)
	}
	if c.RopeScaleLinear < 0 || math.IsNaN(c.RopeScaleLinear) {
		return c, configErr("rope scale %v must be positive", c.RopeScaleLinear)
	}
	for _, s := range c.Tensors() {
		if k := c.kind(s); int64(s.Shape[0])%k.BlockSize() != 0 {
			return c, configErr("tensor %s has rows of %d elements, which %s cannot hold (needs a multiple of %d)", s.Name, s.Shape[0], k, k.BlockSize())
		}
	}
	return c, nil
}

// TensorSpec is one tensor of a generated model. Shape is in ggml order
// (ne0 first: the row length).
type TensorSpec struct {
	Name  string
	Shape []uint64
	init  initKind
}

type initKind int

const (
	initLinear    initKind = iota // N(0, 1/fan_in), fan_in = Shape[0]
	initEmbed                     // N(0, 1)
	initOutput                    // N(0, 4/embd)
	initNorm                      // 1 + N(0, 0.01)
	initBias                      // N(0, 0.01)
	initRopeFreqs                 // Llama 3.1 frequency factors
	initRouter                    // MoE router rows N(0, routerScale(row)²/fan_in)
	initWide                      // N(0, 16/fan_in): gpt-oss's expert gate and up, wide enough for swiglu-oai's clamp at 7
	initSink                      // N(0, 1): gpt-oss's attention sinks, one logit per head
	initRopeLong                  // phi3's rope_factors_long
	initRopeShort                 // phi3's rope_factors_short
)

// routerScale is the standard deviation of expert j's router logit (for
// unit-RMS inputs): 4 for expert 0, shrinking by 0.75 per expert. Equal
// scales would route uniformly; real routers are skewed (a few experts take
// most tokens), and a wider logit wins the top-k more often, so expert 0
// is picked most and the last least. Logits this wide also make the
// softmax peaky, so the top-k probabilities and their normalisation differ
// from token to token.
func routerScale(j int) float64 { return 4 * math.Pow(0.75, float64(j)) }

// kind is the type a tensor is written in: 1-D tensors (norms, biases) and
// the MoE router are F32, as llama.cpp's quantizer leaves them; the rest
// have the file's type, or the type its mix gives the tensor.
func (c Config) kind(s TensorSpec) gguf.Type {
	if len(s.Shape) == 1 || s.init == initRouter || s.init == initBias { // gpt-oss's expert biases are 2-D
		return gguf.TypeF32
	}
	if t := types[c.Type]; t.layout != nil {
		return t.layout(c, s.Name, s.Shape)
	}
	return types[c.Type].tt
}

// blockQuantized reports whether t stores blocks with their own scales
// (anything but the float types), which the block pool may recombine.
func blockQuantized(t gguf.Type) bool {
	return t != gguf.TypeF32 && t != gguf.TypeF16 && t != gguf.TypeBF16
}

// Tensors lists the tensors of the model c describes (c must be normalized).
func (c Config) Tensors() []TensorSpec {
	e, ff := uint64(c.Embd), uint64(c.FF)
	q := uint64(c.Heads * c.HeadDim)
	kv := uint64(c.KVHeads * c.HeadDim)
	v := uint64(c.Vocab)
	// A tied head multiplies by token_embd: give it the output head's scale,
	// or logits grow with sqrt(embd) and favour repeating the input token.
	embInit := initEmbed
	if c.TiedOutput {
		embInit = initOutput
	}
	ts := []TensorSpec{
		{"token_embd.weight", []uint64{e, v}, embInit},
		{"output_norm.weight", []uint64{e}, initNorm},
	}
	if !c.TiedOutput {
		ts = append(ts, TensorSpec{"output.weight", []uint64{e, v}, initOutput})
	}
	if c.RopeFreqs {
		ts = append(ts, TensorSpec{"rope_freqs.weight", []uint64{uint64(c.HeadDim / 2)}, initRopeFreqs})
	}
	if c.Arch == "phi3" {
		ts = append(ts, TensorSpec{"rope_factors_long.weight", []uint64{uint64(c.HeadDim / 2)}, initRopeLong},
			TensorSpec{"rope_factors_short.weight", []uint64{uint64(c.HeadDim / 2)}, initRopeShort})
	}
	for i := range c.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts, TensorSpec{p + "attn_norm.weight", []uint64{e}, initNorm})
		if c.Arch == "phi3" { // Q, K and V in one weight, as every phi3 GGUF has them
			ts = append(ts, TensorSpec{p + "attn_qkv.weight", []uint64{e, q + 2*kv}, initLinear})
		} else {
			ts = append(ts,
				TensorSpec{p + "attn_q.weight", []uint64{e, q}, initLinear},
				TensorSpec{p + "attn_k.weight", []uint64{e, kv}, initLinear},
				TensorSpec{p + "attn_v.weight", []uint64{e, kv}, initLinear})
		}
		ts = append(ts, TensorSpec{p + "attn_output.weight", []uint64{q, e}, initLinear})
		if c.Arch == "gpt-oss" { // its FFN norm's name in llama.cpp
			ts = append(ts, TensorSpec{p + "post_attention_norm.weight", []uint64{e}, initNorm})
		} else {
			ts = append(ts, TensorSpec{p + "ffn_norm.weight", []uint64{e}, initNorm})
		}
		switch {
		case moe(c.Arch):
			// ggml order: one [rows, cols] matrix per expert, experts last.
			n, fe := uint64(c.Experts), uint64(c.ExpertFF)
			gateUp := initLinear
			if c.Arch == "gpt-oss" {
				gateUp = initWide
			}
			ts = append(ts,
				TensorSpec{p + "ffn_gate_inp.weight", []uint64{e, n}, initRouter},
				TensorSpec{p + "ffn_gate_exps.weight", []uint64{e, fe, n}, gateUp},
				TensorSpec{p + "ffn_up_exps.weight", []uint64{e, fe, n}, gateUp},
				TensorSpec{p + "ffn_down_exps.weight", []uint64{fe, e, n}, initLinear},
			)
			if c.Arch == "gpt-oss" {
				ts = append(ts,
					TensorSpec{p + "ffn_gate_inp.bias", []uint64{n}, initBias},
					TensorSpec{p + "ffn_gate_exps.bias", []uint64{fe, n}, initBias},
					TensorSpec{p + "ffn_up_exps.bias", []uint64{fe, n}, initBias},
					TensorSpec{p + "ffn_down_exps.bias", []uint64{e, n}, initBias},
				)
			}
		case c.Arch == "phi3": // gate and up in one weight: ffn_up [embd, 2 ff]
			ts = append(ts,
				TensorSpec{p + "ffn_up.weight", []uint64{e, 2 * ff}, initLinear},
				TensorSpec{p + "ffn_down.weight", []uint64{ff, e}, initLinear},
			)
		default:
			ts = append(ts,
				TensorSpec{p + "ffn_gate.weight", []uint64{e, ff}, initLinear},
				TensorSpec{p + "ffn_up.weight", []uint64{e, ff}, initLinear},
				TensorSpec{p + "ffn_down.weight", []uint64{ff, e}, initLinear},
			)
		}
		switch c.Arch {
		case "qwen2":
			ts = append(ts,
				TensorSpec{p + "attn_q.bias", []uint64{q}, initBias},
				TensorSpec{p + "attn_k.bias", []uint64{kv}, initBias},
				TensorSpec{p + "attn_v.bias", []uint64{kv}, initBias},
			)
		case "qwen3", "qwen3moe", "gemma3":
			ts = append(ts,
				TensorSpec{p + "attn_q_norm.weight", []uint64{uint64(c.HeadDim)}, initNorm},
				TensorSpec{p + "attn_k_norm.weight", []uint64{uint64(c.HeadDim)}, initNorm},
			)
		case "gpt-oss":
			ts = append(ts,
				TensorSpec{p + "attn_q.bias", []uint64{q}, initBias},
				TensorSpec{p + "attn_k.bias", []uint64{kv}, initBias},
				TensorSpec{p + "attn_v.bias", []uint64{kv}, initBias},
				TensorSpec{p + "attn_output.bias", []uint64{e}, initBias},
				TensorSpec{p + "attn_sinks.weight", []uint64{uint64(c.Heads)}, initSink},
			)
		}
		if gemma(c.Arch) {
			ts = append(ts,
				TensorSpec{p + "post_attention_norm.weight", []uint64{e}, initNorm},
				TensorSpec{p + "post_ffw_norm.weight", []uint64{e}, initNorm},
			)
		}
	}
	return ts
}

// ggufArch is the general.architecture string llama.cpp knows the family by.
func (c Config) ggufArch() string {
	if c.Arch == "mistral" {
		return "llama"
	}
	return c.Arch
}

const ropeFreqsBase = 500000

// Llama 3.1's rope scaling constants (convert_hf_to_gguf.py, LlamaModel).
const (
	llama3Factor        = 8.0
	llama3LowFreqFactor = 1.0
	llama3HighFreqFac   = 4.0
	llama3OrigCtx       = 8192.0
)

// KV returns the metadata of the model (c must be normalized). Keys without
// a general./tokenizer. prefix get "<arch>." from the writer.
func (c Config) KV(v Vocab) fsggml.KV {
	kv := fsggml.KV{
		"general.architecture":             c.ggufArch(),
		"general.name":                     fmt.Sprintf("homering-random-%s-%s", c.Arch, c.Type),
		"general.description":              c.description(),
		"general.file_type":                types[c.Type].fileType,
		"general.quantization_version":     uint32(2),
		"general.alignment":                uint32(32),
		"block_count":                      uint32(c.Layers),
		"context_length":                   uint32(c.Ctx),
		"embedding_length":                 uint32(c.Embd),
		"feed_forward_length":              uint32(c.FF),
		"attention.head_count":             uint32(c.Heads),
		"attention.head_count_kv":          uint32(c.KVHeads),
		"attention.layer_norm_rms_epsilon": float32(1e-5),
		"rope.dimension_count":             uint32(c.HeadDim),
		"vocab_size":                       uint32(c.Vocab),
		"tokenizer.ggml.model":             "llama",
		"tokenizer.ggml.tokens":            v.Tokens,
		"tokenizer.ggml.scores":            v.Scores,
		"tokenizer.ggml.token_type":        v.Types,
		"tokenizer.ggml.bos_token_id":      uint32(BosID),
		"tokenizer.ggml.eos_token_id":      uint32(EosID),
		"tokenizer.ggml.unknown_token_id":  uint32(UnkID),
		"tokenizer.ggml.add_bos_token":     true,
		"tokenizer.ggml.add_eos_token":     false,
	}
	switch c.Arch {
	case "llama":
		kv["rope.freq_base"] = float32(10000)
	case "mistral":
		kv["rope.freq_base"] = float32(1e6)
		kv["tokenizer.chat_template"] = mistralTemplate
	case "qwen2", "qwen3", "qwen3moe":
		kv["rope.freq_base"] = float32(1e6)
		kv["attention.layer_norm_rms_epsilon"] = float32(1e-6)
		kv["tokenizer.chat_template"] = chatMLTemplate
		if c.Arch != "qwen2" {
			kv["tokenizer.chat_template"] = qwen3Template
		}
	case "gemma2", "gemma3":
		// gemma3's global layers rope at 1e6, its sliding ones at
		// llama.cpp's fixed 10000; gemma2's all at 10000.
		kv["rope.freq_base"] = float32(10000)
		if c.Arch == "gemma3" {
			kv["rope.freq_base"] = float32(1e6)
		}
		kv["attention.layer_norm_rms_epsilon"] = float32(1e-6)
		kv["attention.sliding_window"] = uint32(c.SlidingWindow)
		kv["tokenizer.chat_template"] = gemma2Template
		if c.Arch == "gemma3" {
			kv["tokenizer.chat_template"] = gemma3Template
		}
		if c.Arch == "gemma2" {
			kv["attn_logit_softcapping"] = float32(gemma2AttnSoftcap)
		}
		if c.FinalSoftcap > 0 {
			kv["final_logit_softcapping"] = float32(c.FinalSoftcap)
		}
	case "phi3":
		kv["tokenizer.chat_template"] = phi3Template
		// As convert_hf_to_gguf.py's Phi3MiniModel writes a 128k model:
		// the LongRoPE factors are tensors, the attention factor a key.
		kv["rope.freq_base"] = float32(10000)
		kv["rope.scaling.original_context_length"] = uint32(c.RopeOrigCtx)
		if c.Ctx > c.RopeOrigCtx {
			scale := float64(c.Ctx) / float64(c.RopeOrigCtx)
			kv["rope.scaling.attn_factor"] = float32(math.Sqrt(1 + math.Log(scale)/math.Log(float64(c.RopeOrigCtx))))
		}
	case "gpt-oss":
		// gpt-oss-20b's rope: YaRN, factor 32 over 4096 positions.
		kv["rope.freq_base"] = float32(150000)
		kv["rope.scaling.type"] = "yarn"
		kv["rope.scaling.factor"] = float32(32)
		kv["rope.scaling.original_context_length"] = uint32(4096)
		kv["attention.sliding_window"] = uint32(c.SlidingWindow)
		kv["tokenizer.chat_template"] = harmonyTemplate
	}
	if c.ChatTemplate != "" {
		kv["tokenizer.chat_template"] = c.ChatTemplate
	}
	if c.Arch == "qwen3" || moe(c.Arch) || gemma(c.Arch) {
		kv["attention.key_length"] = uint32(c.HeadDim)
		kv["attention.value_length"] = uint32(c.HeadDim)
	}
	if moe(c.Arch) {
		kv["expert_count"] = uint32(c.Experts)
		kv["expert_used_count"] = uint32(c.ExpertsUsed)
		kv["expert_feed_forward_length"] = uint32(c.ExpertFF)
	}
	if c.RopeFreqs {
		kv["rope.freq_base"] = float32(ropeFreqsBase)
	}
	if c.RopeScaleLinear > 0 {
		kv["rope.scaling.type"] = "linear"
		kv["rope.scaling.factor"] = float32(c.RopeScaleLinear)
	}
	return kv
}

// description identifies the generator version and seed that made a file.
func (c Config) description() string {
	if c.QuietFrom > 0 {
		return fmt.Sprintf("random weights, homering modelgen v%d, seed %d, layers from %d quiet x%g", GeneratorVersion, c.Seed, c.QuietFrom, c.QuietScale)
	}
	return fmt.Sprintf("random weights, homering modelgen v%d, seed %d", GeneratorVersion, c.Seed)
}

// Current reports whether path holds the file Generate would write for c:
// the exact size FileSize predicts and the same generator version and seed
// in general.description (the header is parsed, the data not read).
func Current(path string, c Config) (bool, error) {
	want, err := FileSize(c)
	if err != nil {
		return false, err
	}
	c, _ = c.Normalize()
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() != want {
		return false, nil
	}
	f, err := gguf.Open(path)
	if err != nil {
		return false, nil
	}
	desc, _ := f.String("general.description")
	return desc == c.description(), nil
}

const chatMLTemplate = `{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`

// The generated models' chat templates are each family's template as its
// released GGUFs carry it, written here from the family's documented turn
// format (condensed where the release handles images or options a
// generated model cannot use). llama.cpp matches each to its built-in
// format by its markers (engine/llama's TestFamilyTemplates holds the
// rendering to the documented bytes).

// gemma2Template is Gemma 2's: no system role, the assistant is "model",
// contents trimmed.
const gemma2Template = `{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}`

// gemma3Template is Gemma 3's (text only): a system message opens the first
// user turn, followed by a blank line.
const gemma3Template = `{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
    {{- message['content'] | trim -}}
    {{ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{ '<start_of_turn>model\n' }}
{%- endif -%}
`

// phi3Template is Phi-3's: <|role|>, a newline, the content, <|end|>.
const phi3Template = `{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}`

// qwen3Template is Qwen 3's ChatML with tools in the system turn and
// thinking: an earlier answer is kept without its <think> part, and
// enable_thinking=false opens the reply with an empty one.
const qwen3Template = `{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- elif messages[0].role == 'system' %}
    {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == "user" or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}
    {%- elif message.role == "assistant" %}
        {%- set content = message.content %}
        {%- if message.reasoning_content is string %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- elif '</think>' in content %}
            {%- set content = content.split('</think>')[-1].lstrip('\n') %}
        {%- endif %}
        {{- '<|im_start|>assistant\n' + content }}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' + tool_call.name + '", "arguments": ' + (tool_call.arguments | tojson) + '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or messages[loop.index0 - 1].role != "tool" %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' + message.content + '\n</tool_response>' }}
        {%- if loop.last or messages[loop.index0 + 1].role != "tool" %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}`

// harmonyTemplate is gpt-oss's harmony format: a system header, the
// client's system prompt as developer instructions, and assistant turns on
// channels (analysis for reasoning, final for the answer).
const harmonyTemplate = `{{- '<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: ' + strftime_now('%Y-%m-%d') + '\n\nReasoning: ' + (reasoning_effort | default('medium')) + '\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>' -}}
{%- if messages[0].role in ['system', 'developer'] -%}
    {{- '<|start|>developer<|message|># Instructions\n\n' + messages[0].content + '\n\n<|end|>' -}}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if message.role == 'assistant' -%}
        {%- if message.thinking and loop.last -%}
            {{- '<|start|>assistant<|channel|>analysis<|message|>' + message.thinking + '<|end|>' -}}
        {%- endif -%}
        {{- '<|start|>assistant<|channel|>final<|message|>' + message.content + '<|end|>' -}}
    {%- elif message.role == 'tool' -%}
        {{- '<|start|>functions.' + message.name + ' to=assistant<|channel|>commentary<|message|>' + message.content + '<|end|>' -}}
    {%- else -%}
        {{- '<|start|>' + message.role + '<|message|>' + message.content + '<|end|>' -}}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{- '<|start|>assistant' -}}
{%- endif -%}`

const mistralTemplate = `{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token }}{% endif %}{% endfor %}`

// Generate writes the model c describes to path (atomically: a temporary
// file in the same directory is renamed into place when complete).
func Generate(path string, c Config) error {
	c, err := c.Normalize()
	if err != nil {
		return err
	}
	voc, err := c.vocab()
	if err != nil {
		return err
	}
	specs := c.Tensors()
	ts := make([]*fsggml.Tensor, len(specs))
	type poolKey struct {
		kind gguf.Type
		std  float64
	}
	pools := map[poolKey][]byte{}
	for i, s := range specs {
		kind := c.kind(s)
		d := &tensorData{spec: s, kind: kind, cfg: c}
		if blockQuantized(kind) && elements(s.Shape) > directElems {
			// Only zero-mean (2-D) tensors get here: norms are 1-D and F32.
			_, std := d.distribution()
			k := poolKey{kind, std}
			if pools[k] == nil {
				if pools[k], err = quantizedPool(kind, c.Seed, std); err != nil {
					return err
				}
			}
			d.pool = pools[k]
		}
		ts[i] = &fsggml.Tensor{Name: s.Name, Kind: uint32(kind), Shape: s.Shape, WriterTo: d}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("modelgen: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := fsggml.WriteGGUF(tmp, c.KV(voc), ts); err != nil {
		_ = tmp.Close() // the error to report is the one above
		return fmt.Errorf("modelgen: writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close() // the error to report is the one above
		return fmt.Errorf("modelgen: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("modelgen: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("modelgen: %w", err)
	}
	return nil
}

// tensorData produces one tensor's bytes on demand, so that the writer never
// holds more than a chunk of rows per tensor in memory.
type tensorData struct {
	spec TensorSpec
	kind gguf.Type
	cfg  Config
	pool []byte // quantized blocks to draw from; nil: quantize every value
}

// poolElems is both the size of a block pool and the tensor size above which
// a quantized tensor is assembled from pool blocks. ggml's K-quantizers run at
// ~130 ns per weight on this class of machine, so quantizing a 1 GB Q4_K model
// value by value takes minutes; drawing each block at random from 2^22
// quantized values of the same distribution takes a second and still gives
// every row its own content (a row of 8 Q4_K blocks has 16384^8 choices).
// Quantized blocks are self-contained (own scales), so any sequence of them is
// a valid tensor.
const poolElems = 1 << 22

// directElems: tensors up to this many values are quantized value by value
// (every tensor of the small test models, e.g. 256x1000 token_embd).
const directElems = 1 << 18

func elements(shape []uint64) uint64 {
	n := uint64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// quantizedPool quantizes poolElems values of N(0, std²) into kind's blocks.
func quantizedPool(kind gguf.Type, seed uint64, std float64) ([]byte, error) {
	rng := rand.New(rand.NewPCG(seed, math.Float64bits(std)))
	f := make([]float32, poolElems)
	for i := range f {
		f[i] = float32(std * rng.NormFloat64())
	}
	const rowLen = 256 // a multiple of every block size
	b, err := quant.Quantize(int(kind), f, rowLen, importance(kind, seed, "pool", rowLen))
	if err != nil {
		return nil, fmt.Errorf("modelgen: %w", err)
	}
	return b, nil
}

// importance is the importance matrix a tensor of kind is quantized with:
// nil (llama-quantize without --imatrix), except for the types ggml refuses
// to quantize without one (IQ2_XXS, IQ2_XS, IQ1_S). There it is generated,
// not measured: rowLen values exp(N(0, 0.5²)), seeded by the tensor's name,
// positive and uneven across input columns as a real imatrix (mean squared
// activations) is. The values the model computes do not depend on it, only
// which codebook points the quantizer picks.
func importance(kind gguf.Type, seed uint64, name string, rowLen int) []float32 {
	if !quant.NeedsImatrix(int(kind)) {
		return nil
	}
	h := fnv.New64a()
	h.Write([]byte("imatrix " + name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	im := make([]float32, rowLen)
	for i := range im {
		im[i] = float32(math.Exp(0.5 * rng.NormFloat64()))
	}
	return im
}

// distribution returns the mean and standard deviation of the tensor's values.
func (d *tensorData) distribution() (mean, std float64) {
	mean, std = d.baseDistribution()
	if c := d.cfg; c.QuietFrom > 0 && layerOf(d.spec.Name) >= c.QuietFrom &&
		(strings.HasSuffix(d.spec.Name, ".attn_output.weight") || strings.HasSuffix(d.spec.Name, ".ffn_down.weight")) {
		std *= c.QuietScale
	}
	return mean, std
}

func (d *tensorData) baseDistribution() (mean, std float64) {
	rowLen := float64(d.spec.Shape[0])
	switch d.spec.init {
	case initLinear:
		return 0, 1 / math.Sqrt(rowLen)
	case initWide:
		return 0, 4 / math.Sqrt(rowLen)
	case initSink:
		return 0, 1
	case initEmbed:
		return 0, 1
	case initOutput:
		return 0, 2 / math.Sqrt(float64(d.cfg.Embd))
	case initNorm:
		return 1, 0.1
	case initBias:
		return 0, 0.1
	}
	return 0, 0
}

// writePooled writes the tensor as blocks drawn at random from d.pool.
func (d *tensorData) writePooled(w io.Writer, rng *rand.Rand) (int64, error) {
	blockBytes := int(d.kind.TypeSize())
	nBlocks := int(elements(d.spec.Shape) / uint64(d.kind.BlockSize()))
	poolBlocks := len(d.pool) / blockBytes
	const blocksPerChunk = 1 << 14
	buf := make([]byte, 0, blocksPerChunk*blockBytes)
	var total int64
	for b := 0; b < nBlocks; b += blocksPerChunk {
		buf = buf[:0]
		for range min(blocksPerChunk, nBlocks-b) {
			i := rng.IntN(poolBlocks) * blockBytes
			buf = append(buf, d.pool[i:i+blockBytes]...)
		}
		n, err := w.Write(buf)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// chunkElems bounds the F32 scratch per tensor (rows are never split).
const chunkElems = 1 << 22

func (d *tensorData) WriteTo(w io.Writer) (int64, error) {
	h := fnv.New64a()
	h.Write([]byte(d.spec.Name))
	rng := rand.New(rand.NewPCG(d.cfg.Seed, h.Sum64()))
	rowLen := int(d.spec.Shape[0])
	rows := 1
	for _, n := range d.spec.Shape[1:] {
		rows *= int(n)
	}
	if d.spec.init == initRopeFreqs {
		return writeF32(w, ropeFreqFactors(d.cfg.HeadDim))
	}
	if d.spec.init == initRopeLong || d.spec.init == initRopeShort {
		return writeF32(w, longRopeFactors(rowLen, d.spec.init == initRopeLong))
	}
	if d.spec.init == initRouter {
		f := make([]float32, rows*rowLen)
		for j := range rows {
			std := routerScale(j) / math.Sqrt(float64(rowLen))
			for i := range rowLen {
				f[j*rowLen+i] = float32(std * rng.NormFloat64())
			}
		}
		return writeF32(w, f)
	}
	if d.pool != nil {
		return d.writePooled(w, rng)
	}
	mean, std := d.distribution()
	im := importance(d.kind, d.cfg.Seed, d.spec.Name, rowLen)
	rowsPerChunk := max(1, chunkElems/rowLen)
	buf := make([]float32, min(rows, rowsPerChunk)*rowLen)
	var total int64
	for r := 0; r < rows; r += rowsPerChunk {
		n := min(rowsPerChunk, rows-r)
		f := buf[:n*rowLen]
		for i := range f {
			f[i] = float32(mean + std*rng.NormFloat64())
		}
		if d.kind == gguf.TypeF32 {
			k, err := writeF32(w, f)
			total += k
			if err != nil {
				return total, err
			}
			continue
		}
		b, err := quant.Quantize(int(d.kind), f, rowLen, im)
		if err != nil {
			return total, fmt.Errorf("modelgen: tensor %s: %w", d.spec.Name, err)
		}
		k, err := w.Write(b)
		total += int64(k)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func writeF32(w io.Writer, f []float32) (int64, error) {
	b := make([]byte, 4*len(f))
	for i, x := range f {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	n, err := w.Write(b)
	return int64(n), err
}

// ropeFreqFactors computes Llama 3.1's per-dimension rope factors as
// convert_hf_to_gguf.py does, for head dimension dims and base 500000.
func ropeFreqFactors(dims int) []float32 {
	lowWavelen := llama3OrigCtx / llama3LowFreqFactor
	highWavelen := llama3OrigCtx / llama3HighFreqFac
	out := make([]float32, dims/2)
	for i := range out {
		freq := 1 / math.Pow(ropeFreqsBase, float64(2*i)/float64(dims))
		wavelen := 2 * math.Pi / freq
		switch {
		case wavelen < highWavelen:
			out[i] = 1
		case wavelen > lowWavelen:
			out[i] = llama3Factor
		default:
			smooth := (llama3OrigCtx/wavelen - llama3LowFreqFactor) / (llama3HighFreqFac - llama3LowFreqFactor)
			out[i] = float32(1 / ((1-smooth)/llama3Factor + smooth))
		}
	}
	return out
}

// phi3Specials are Phi-3's added control tokens, which llama.cpp's vocab
// loader looks up by name in any model whose general.name says phi3.
var phi3Specials = []string{"<|endoftext|>", "<|assistant|>", "<|end|>", "<|system|>", "<|user|>"}

// vocab is the model's vocabulary: BuildVocab's, with phi3's control
// tokens last (ids after the SentencePiece pieces, as in Phi-3's).
func (c Config) vocab() (Vocab, error) {
	if c.Arch != "phi3" {
		return BuildVocab(c.Vocab)
	}
	v, err := BuildVocab(c.Vocab - len(phi3Specials))
	if err != nil {
		return v, err
	}
	for _, t := range phi3Specials {
		v.Tokens = append(v.Tokens, t)
		v.Scores = append(v.Scores, 0)
		v.Types = append(v.Types, tokenControl)
	}
	return v, nil
}

// longRopeFactors are LongRoPE factors of n dimensions shaped as Phi-3's:
// 1 for the fastest-turning dimensions, growing towards the slow ones, the
// long ones (up to 64) much further than the short ones (up to 2).
func longRopeFactors(n int, long bool) []float32 {
	top := 2.0
	if long {
		top = 64
	}
	out := make([]float32, n)
	for i := range out {
		x := float64(i) / float64(max(1, n-1))
		out[i] = float32(math.Pow(top, x*x))
	}
	return out
}

// FileSize returns the exact size in bytes of the file Generate writes for c,
// without writing it (so that set-up can tell a complete file from a cut one).
// It follows ollama's fs/ggml.WriteGGUF: GGUF v3, keys sorted, each tensor's
// data padded to general.alignment.
func FileSize(c Config) (int64, error) {
	c, err := c.Normalize()
	if err != nil {
		return 0, err
	}
	voc, err := c.vocab()
	if err != nil {
		return 0, err
	}
	kv := c.KV(voc)
	arch := c.ggufArch()
	const align = 32
	n := int64(4 + 4 + 8 + 8)
	for k, v := range kv {
		if !strings.HasPrefix(k, "general.") && !strings.HasPrefix(k, "tokenizer.") {
			k = arch + "." + k
		}
		n += 8 + int64(len(k)) + 4 // key, value type
		switch v := v.(type) {
		case string:
			n += 8 + int64(len(v))
		case uint32, float32:
			n += 4
		case bool:
			n++
		case []string:
			n += 4 + 8
			for _, s := range v {
				n += 8 + int64(len(s))
			}
		case []float32:
			n += 4 + 8 + 4*int64(len(v))
		case []int32:
			n += 4 + 8 + 4*int64(len(v))
		default:
			return 0, fmt.Errorf("modelgen: no size rule for key %s of type %T", k, v)
		}
	}
	// WriteGGUF orders tensors by block number (non-block tensors last), then
	// name, pads each one's data to the alignment and ends the file right after
	// the last tensor's bytes.
	specs := c.Tensors()
	last := 0
	var data, lastPad int64
	for i, s := range specs {
		n += 8 + int64(len(s.Name)) + 4 + 8*int64(len(s.Shape)) + 4 + 8
		kind := c.kind(s)
		size := int64(elements(s.Shape)) / kind.BlockSize() * kind.TypeSize()
		pad := (align - size%align) % align
		data += size + pad
		if writeOrderLess(specs[last].Name, s.Name) {
			last, lastPad = i, pad
		} else if i == 0 {
			lastPad = pad
		}
	}
	n += (align - n%align) % align
	return n + data - lastPad, nil
}

// writeOrderLess reports whether WriteGGUF writes tensor a before tensor b.
func writeOrderLess(a, b string) bool {
	block := func(name string) int {
		var n int
		if _, err := fmt.Sscanf(name, "blk.%d.", &n); err != nil {
			return math.MaxInt
		}
		return n
	}
	if ba, bb := block(a), block(b); ba != bb {
		return ba < bb
	}
	return a < b
}
