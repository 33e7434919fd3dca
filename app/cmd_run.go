package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"homering/app/api/openai"
	"homering/engine/chat"
	"homering/engine/gguf"
	"homering/engine/head"
	"homering/engine/sample"
)

const runUsage = `Usage: homering run -m FILE.gguf [flags] PROMPT

Generates text from PROMPT with the model on this machine alone and streams it
to stdout; prompt and generation speeds go to stderr. With --chat the prompt is
one user message in the model's chat template (ChatML if the file has none).

Flags:
`

// cmdRun is `homering run`.
func cmdRun(ctx context.Context, e env) int {
	fs := newFlags(e, "run", runUsage)
	def := sample.Defaults()
	model := fs.String("m", "", "the GGUF model `file` (required)")
	n := fs.Int("n", 128, "generate at most `N` tokens (0: until the model stops or the context is full)")
	temp := fs.Float64("temp", shortest(def.Temperature), "sampling temperature (0: greedy)")
	topK := fs.Int("top-k", def.TopK, "keep the K most likely tokens (0: off)")
	topP := fs.Float64("top-p", shortest(def.TopP), "keep the most likely tokens up to this probability mass (1: off)")
	minP := fs.Float64("min-p", shortest(def.MinP), "drop tokens less likely than this fraction of the best one (0: off)")
	repeat := fs.Float64("repeat-penalty", shortest(def.RepeatPenalty), "penalise tokens seen in the last --repeat-last-n (1: off)")
	repeatN := fs.Int("repeat-last-n", def.RepeatLastN, "how many recent tokens the repeat penalty looks at")
	seed := fs.Int64("seed", -1, "random seed (-1: pick one and print it)")
	threads := fs.Int("threads", runtime.NumCPU(), "CPU threads")
	nCtx := fs.Int("ctx", 0, "context size in tokens (0: the model's, at most 4096)")
	asChat := fs.Bool("chat", false, "send PROMPT as a user message in the model's chat template")

	// Flags may come before or after the prompt's words.
	words, exit, ok := parseInterspersed(fs, e.args)
	if !ok {
		return exit
	}
	prompt := strings.Join(words, " ")
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(e.stderr, "homering run: "+format+"\n", a...)
		return code
	}
	switch {
	case *model == "":
		fs.Usage()
		return fail(2, "give a model with -m FILE.gguf.")
	case prompt == "":
		fs.Usage()
		return fail(2, "give a prompt after the flags.")
	case *threads < 1:
		return fail(2, "--threads must be at least 1, not %d.", *threads)
	case *n < 0:
		return fail(2, "-n must be 0 or more, not %d.", *n)
	case *nCtx < 0:
		return fail(2, "--ctx must be 0 or more, not %d.", *nCtx)
	}
	if err := openai.CheckTemperature(*temp); err != nil { // the APIs' rule, word for word
		return fail(2, "%s.", openai.RefusedBecause(err))
	}
	params := sample.Params{
		Temperature: float32(*temp), TopK: *topK, TopP: float32(*topP), MinP: float32(*minP),
		RepeatPenalty: float32(*repeat), RepeatLastN: *repeatN,
	}
	if err := params.Validate(); err != nil {
		return fail(2, "%s.", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if *seed < 0 {
		*seed = time.Now().UnixNano() & 0x7fffffff // a run's seed is printed, so it can be replayed
	}

	// Check the file in pure Go first: a cut or foreign file is a sentence,
	// never a C abort.
	f, err := gguf.Open(*model)
	if err != nil {
		return fail(1, "%v", err)
	}
	if _, err := f.Check(); err != nil {
		return fail(1, "%v", err)
	}
	h, err := head.Open(head.Config{ModelPath: *model, NCtx: *nCtx, Threads: *threads})
	if err != nil {
		return fail(1, "cannot load %s: %v", *model, err)
	}
	defer h.Close()

	req := head.Request{MaxTokens: *n, Sampling: params, Seed: uint64(*seed)}
	if *asChat {
		req.Messages = []chat.Message{{Role: "user", Content: prompt}}
	} else {
		req.Prompt = prompt
	}
	out := bufio.NewWriter(e.stdout)
	var last head.Token
	generated := 0
	start := time.Now()
	err = h.Generate(ctx, req, func(t head.Token) error {
		last = t
		if !t.EOG {
			generated++
		}
		if _, err := out.WriteString(t.Text); err != nil {
			return err
		}
		return out.Flush() // stream: a token is visible as soon as it exists
	})
	fmt.Fprintln(out)
	_ = out.Flush() // the terminal, as fmt.Fprint
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return fail(130, "interrupted.")
		}
		return fail(1, "%v", err)
	}
	s := last.Stats
	fmt.Fprintf(e.stderr, "homering run: prompt %d tokens (%d cached) in %s, %.1f tok/s; generated %d tokens, decode %.1f tok/s; total %s; seed %d\n",
		s.PromptTokens, s.CachedTokens, s.PromptTime.Round(time.Millisecond), perSecond(s.PromptTokens-s.CachedTokens, s.PromptTime),
		generated, perSecond(s.DecodeTokens, s.DecodeTime), time.Since(start).Round(time.Millisecond), *seed)
	return 0
}

// shortest is x as the float64 with the same shortest decimal form, so that
// a float32 default prints as 0.8 in the flags' help, not as
// float64(float32(0.8)) = 0.800000011920929.
func shortest(x float32) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
	return f
}

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
