package app

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"homering/engine/modelgen"
)

const genModelUsage = `Usage: homering gen-model -o FILE [flags]

Writes a GGUF with random weights, for tests and benchmarks.

Flags:
`

// cmdGenModel writes a GGUF with random weights (engine/modelgen) for tests
// and benchmarks.
func cmdGenModel(_ context.Context, e env) int {
	fs := newFlags(e, "gen-model", genModelUsage)
	var c modelgen.Config
	var out string
	fs.StringVar(&c.Arch, "arch", "llama", "family: "+strings.Join(modelgen.Arches(), ", "))
	fs.IntVar(&c.Layers, "layers", 4, "number of transformer blocks")
	fs.IntVar(&c.Embd, "embd", 256, "embedding length")
	fs.IntVar(&c.FF, "ff", 512, "feed-forward length")
	fs.IntVar(&c.Heads, "heads", 4, "attention heads")
	fs.IntVar(&c.KVHeads, "kv-heads", 0, "key/value heads (0: same as heads)")
	fs.IntVar(&c.HeadDim, "head-dim", 0, "head dimension (0: embd/heads; only qwen3, qwen3moe, the gemmas and gpt-oss may differ)")
	fs.IntVar(&c.Vocab, "vocab", 1000, "vocabulary size")
	fs.StringVar(&c.Type, "type", "F32", "weight type: "+strings.Join(modelgen.Types(), ", "))
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed (same seed, same file)")
	fs.IntVar(&c.Ctx, "ctx", 4096, "context_length written to the file")
	fs.BoolVar(&c.RopeFreqs, "rope-freqs", false, "add a Llama 3.1 style rope_freqs.weight tensor (llama, mistral)")
	fs.Float64Var(&c.RopeScaleLinear, "rope-scale-linear", 0, "write linear rope scaling with this factor")
	fs.BoolVar(&c.TiedOutput, "tied", false, "no output.weight: the output head reuses token_embd.weight")
	fs.IntVar(&c.Experts, "experts", 0, "qwen3moe, gpt-oss: experts per layer (0: 8)")
	fs.IntVar(&c.ExpertsUsed, "experts-used", 0, "qwen3moe, gpt-oss: experts routed per token (0: 2)")
	fs.IntVar(&c.ExpertFF, "expert-ff", 0, "qwen3moe, gpt-oss: feed-forward length of one expert (0: ff / experts-used)")
	fs.IntVar(&c.SlidingWindow, "sliding-window", 0, "gemma2, gemma3, gpt-oss: attention.sliding_window (0: 16)")
	fs.IntVar(&c.RopeOrigCtx, "rope-orig-ctx", 0, "phi3: rope.scaling.original_context_length (0: ctx/32); a longer context ropes with rope_factors_long")
	fs.Float64Var(&c.FinalSoftcap, "final-softcap", 0, "gemma2, gemma3: final_logit_softcapping (0: gemma2 30, gemma3 none)")
	fs.IntVar(&c.QuietFrom, "quiet-from", 0, "scale the output projections of layers from this one by -quiet-scale (0: none): a target that nearly agrees with the same seed's model of this many layers (a speculative draft)")
	fs.Float64Var(&c.QuietScale, "quiet-scale", 0, "with -quiet-from: the scale of the quiet layers' output projections (0: they change nothing)")
	fs.StringVar(&out, "o", "", "output file (required)")
	keep := fs.Bool("keep", false, "leave FILE alone if it is complete and from this generator version and seed")
	if exit, ok := parseFlags(fs, e.args); !ok {
		return exit
	}
	if out == "" || fs.NArg() != 0 {
		fmt.Fprintln(e.stderr, "homering gen-model: give the output file with -o FILE and no other arguments.")
		return 2
	}
	if *keep {
		current, err := modelgen.Current(out, c)
		if err != nil {
			fmt.Fprintf(e.stderr, "homering gen-model: %v\n", err)
			return 1
		}
		if current {
			fmt.Fprintf(e.stdout, "kept %s\n", out)
			return 0
		}
	}
	start := time.Now()
	if err := modelgen.Generate(out, c); err != nil {
		fmt.Fprintf(e.stderr, "homering gen-model: %v\n", err)
		return 1
	}
	size := int64(-1)
	if st, err := os.Stat(out); err == nil {
		size = st.Size()
	}
	fmt.Fprintf(e.stdout, "wrote %s (%d bytes) in %.1fs\n", out, size, time.Since(start).Seconds())
	return 0
}
