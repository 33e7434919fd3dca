package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"homering/app/api"
	"homering/app/api/openai"
	"homering/app/config"
	"homering/app/planner"
	"homering/engine/chat"
	"homering/engine/gguf"
	"homering/engine/head"
	"homering/engine/runner"
	"homering/engine/sample"
)

const runUsage = `Usage: homering run -m FILE.gguf|NAME [flags] [PROMPT]

Generates text from PROMPT with the model on this machine alone and streams it
to stdout; prompt and generation speeds go to stderr. With --chat the prompt is
one user message in the model's chat template (ChatML if the file has none).
Without PROMPT it is a chat, as ollama run is: each line read from stdin is a
message in the model's chat template, answered with the conversation so far
(/clear forgets it, /bye or the end of input ends the chat).

GPU: the first --gpu-layers layers run on this machine's GPU. auto (the
default) takes the agent's plan for this device alone (Halda's n, from its
measured profile: homering profile; 0 until it has one, or when the gpu
setting is off). The GPU backend library loads from --gpu-dir, else
HOMERING_GPU_DIR, else the versioned directory beside this program;
HOMERING_GPU=off loads none.

Flags:
`

// cmdRun is `homering run`.
func cmdRun(ctx context.Context, e env) int {
	fs := newFlags(e, "run", runUsage)
	def := sample.Defaults()
	model := fs.String("m", "", "the GGUF model `file`, or a name the model list shows (required)")
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
	gpuLayers := fs.String("gpu-layers", "auto", "run the first `N` layers on the GPU (layers+1: the output head too, as llama.cpp's -ngl; auto: the planner's; 0: none)")
	gpuDir := fs.String("gpu-dir", "", "load the GPU backend library (build/gpu-lib.sh) from this `directory`")

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
	if path, err := modelByName(*model); err != nil {
		return fail(1, "%v", err)
	} else if path != "" {
		*model = path
	}
	f, err := gguf.Open(*model)
	if err != nil {
		return fail(1, "%v", err)
	}
	shape, err := f.Check()
	if err != nil {
		return fail(1, "%v", err)
	}
	gpu, code, err := runGPU(*gpuLayers, *gpuDir, *model, *nCtx, shape.NLayer, e.stderr)
	if err != nil {
		return fail(code, "%v", err)
	}
	h, err := head.Open(head.Config{ModelPath: *model, NCtx: *nCtx, Threads: *threads, GPULayers: gpu.layers, OutputGPU: gpu.output})
	if err != nil {
		return fail(1, "cannot load %s: %v", *model, err)
	}
	defer h.Close()

	req := head.Request{MaxTokens: *n, Sampling: params, Seed: uint64(*seed)}
	// generate streams one reply to stdout and its speeds to stderr.
	generate := func(req head.Request) (string, error) {
		out := bufio.NewWriter(e.stdout)
		var last head.Token
		var text strings.Builder
		generated := 0
		start := time.Now()
		err := h.Generate(ctx, req, func(t head.Token) error {
			last = t
			if !t.EOG {
				generated++
			}
			text.WriteString(t.Text)
			if _, err := out.WriteString(t.Text); err != nil {
				return err
			}
			return out.Flush() // stream: a token is visible as soon as it exists
		})
		fmt.Fprintln(out)
		_ = out.Flush() // the terminal, as fmt.Fprint
		if err != nil {
			return text.String(), err
		}
		s := last.Stats
		fmt.Fprintf(e.stderr, "homering run: prompt %d tokens (%d cached) in %s, %.1f tok/s; generated %d tokens, decode %.1f tok/s; total %s; seed %d; %s\n",
			s.PromptTokens, s.CachedTokens, s.PromptTime.Round(time.Millisecond), perSecond(s.PromptTokens-s.CachedTokens, s.PromptTime),
			generated, perSecond(s.DecodeTokens, s.DecodeTime), time.Since(start).Round(time.Millisecond), *seed, gpu)
		return text.String(), nil
	}
	if prompt == "" {
		return runChat(ctx, e, filepath.Base(*model), req, generate)
	}
	if *asChat {
		req.Messages = []chat.Message{{Role: "user", Content: prompt}}
	} else {
		req.Prompt = prompt
	}
	if _, err := generate(req); err != nil {
		if errors.Is(err, context.Canceled) {
			return fail(130, "interrupted.")
		}
		return fail(1, "%v", err)
	}
	return 0
}

// runChat is `homering run` without a prompt: a conversation on stdin, one
// message per line, each answered with the conversation so far in the
// model's chat template (the head keeps the shared prefix's KV, so a turn
// computes only its new tokens). A failed turn is said and dropped; the
// conversation goes on.
func runChat(ctx context.Context, e env, model string, req head.Request, generate func(head.Request) (string, error)) int {
	interactive := isTerminal(e.stdin)
	if interactive {
		fmt.Fprintf(e.stderr, "Chat with %s: type a message and press Enter; /clear forgets the conversation, /bye or Ctrl-D ends it.\n", model)
	}
	var history []chat.Message
	in := bufio.NewScanner(e.stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	for {
		if interactive {
			fmt.Fprint(e.stderr, ">>> ")
		}
		if !in.Scan() {
			break
		}
		line := strings.TrimSpace(in.Text())
		switch line {
		case "":
			continue
		case "/bye":
			return 0
		case "/clear":
			history = nil
			continue
		}
		history = append(history, chat.Message{Role: "user", Content: line})
		turn := req
		turn.Messages = history
		reply, err := generate(turn)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				fmt.Fprintln(e.stderr, "homering run: interrupted.")
				return 130
			}
			fmt.Fprintf(e.stderr, "homering run: %v (the message is dropped; the conversation goes on)\n", err)
			history = history[:len(history)-1]
			continue
		}
		history = append(history, chat.Message{Role: "assistant", Content: reply})
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(e.stderr, "homering run: reading the chat: %v\n", err)
		return 1
	}
	return 0
}

// isTerminal reports whether r is a terminal (a person typing), not a pipe
// or a file: only then is the chat's prompt shown.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// runPlacement is where `homering run` runs the layers.
type runPlacement struct {
	layers int  // the first layers on the GPU
	output bool // the output head too
	device string
}

func (p runPlacement) String() string {
	switch {
	case p.layers == 0 && !p.output:
		return "every layer on the CPU"
	case p.output:
		return fmt.Sprintf("%d layers and the output head on %s", p.layers, p.device)
	}
	return fmt.Sprintf("%d layers on %s", p.layers, p.device)
}

// runGPU resolves --gpu-layers for a model of nLayer layers: it loads the
// GPU backend (engine/runner.LoadGPU, the runner child's one loader) unless
// the answer is 0, and for auto asks the agent's planner for this device
// alone (app/planner: the plan a chat on this device runs). code is the
// exit status of an error.
func runGPU(flag, dir, model string, nCtx, nLayer int, stderr io.Writer) (p runPlacement, code int, err error) {
	auto := flag == "auto"
	n := 0
	if !auto {
		if n, err = strconv.Atoi(flag); err != nil || n < 0 || n > nLayer+1 {
			return p, 2, fmt.Errorf("--gpu-layers is auto or 0 to %d (this model's %d layers, +1 for the output head), not %q", nLayer+1, nLayer, flag)
		}
		if n == 0 {
			return p, 0, nil // CPU only: no GPU library loaded at all
		}
	}
	cfgDir, err := config.Dir(os.Getenv)
	if err != nil {
		return p, 1, err
	}
	set, err := config.LoadSettings(cfgDir)
	if err != nil {
		fmt.Fprintf(stderr, "homering run: %v; planning with the default settings.\n", err)
		set = config.DefaultSettings()
	}
	load := runner.LoadGPU(runner.GPUOptions{Off: !set.UseGPU(), Dir: dir}, nil)
	if load.GPUs == 0 {
		if auto {
			return p, 0, nil
		}
		return p, 1, fmt.Errorf("--gpu-layers %d needs a GPU, and none is loaded: %s", n, load.Why)
	}
	p.device = "the GPU"
	if len(load.Devices) > 0 {
		p.device = load.Devices[0]
	}
	if !auto {
		p.layers, p.output = min(n, nLayer), n > nLayer
		return p, 0, nil
	}
	if nCtx <= 0 {
		nCtx = config.DefaultContextTokens // the head's default, at most 4096
	}
	set.Model, set.ContextTokens = model, nCtx
	pl, err := planner.New(planner.Options{
		Self:     planner.CachedSelf(cfgDir, nil, nil),
		Settings: func() config.Settings { return set },
	}).Next(planner.Request{Alone: true})
	if err != nil || len(pl.Plan.Ring) != 1 {
		fmt.Fprintf(stderr, "homering run: no plan for this device (%v); every layer on the CPU.\n", err)
		return p, 0, nil
	}
	if !pl.Self.Measured {
		fmt.Fprintln(stderr, "homering run: this device has no measured profile yet (homering profile measures it), so the plan puts no layer on the GPU; give --gpu-layers N to choose.")
	}
	p.layers = pl.Plan.Ring[0].N
	return p, 0, nil
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

// modelByName returns the file of the model named name in the model list
// (the model folder, Ollama's and LM Studio's stores, the Hugging Face
// cache: app/api.FindModel), or "" when name is a file or names none (the
// GGUF check then says so about the file).
func modelByName(name string) (string, error) {
	if _, err := os.Stat(name); err == nil || strings.ContainsAny(name, `/\`) && !strings.Contains(name, ":") {
		return "", nil
	}
	modelDir := ""
	if dir, err := config.Dir(os.Getenv); err == nil {
		if set, err := config.LoadSettings(dir); err == nil {
			modelDir = set.ModelDir
		}
	}
	home, _ := os.UserHomeDir()
	path, ok := api.FindModel(home, modelDir, name)
	if !ok && !strings.HasSuffix(strings.ToLower(name), ".gguf") {
		return "", fmt.Errorf("no model file or model named %q; give a GGUF file or a name from the model list (the app's Models page)", name)
	}
	return path, nil
}
