package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"homering/engine/ggml"
	"homering/engine/llama"
)

func main() {
	if spec := os.Getenv(envVariantRun); spec != "" { // a child of -cpu-variants
		if err := variantChild(spec, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "enginebench (variant child):", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "enginebench:", err)
		os.Exit(1)
	}
}

type config struct {
	models  []string
	threads []int
	reps    int
	prefill int
	decode  int
	gpu     bool // layers on the GPU, in both engines
	// gpuLayers, with gpu, is how many layers go on the GPU: -1 every layer
	// and the output head; else our window's first gpuLayers layers and
	// llama.cpp's n_gpu_layers (its last layers: the same cost).
	gpuLayers int
	alloc     bool // ours allocates its logits each step
	// kernels: the variants of our matrix kernels (ggml.KernelVariants) ours
	// runs on, one table row each; "" is the default (HOMERING_KERNELS, else
	// the best this CPU runs).
	kernels []string
	// readBW[t] is this machine's read bandwidth in bytes/s with t threads
	// (readBandwidth), for the thread counts measured; nil when not measured.
	readBW map[int]float64
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("enginebench", flag.ContinueOnError)
	models := fs.String("models", "", "comma-separated GGUF files")
	threads := fs.String("threads", "1,2", "comma-separated thread counts")
	reps := fs.Int("reps", 3, "timed repetitions per engine (the median is reported)")
	prefill := fs.Int("prefill", 128, "prompt tokens evaluated as one batch")
	decode := fs.Int("decode", 32, "single-token decode steps")
	gpuDir := fs.String("gpu-dir", "", "load ggml GPU backends from this directory (build/gpu-lib.sh), check the GPU's logits against the CPU's and run every engine on the GPU")
	checkOnly := fs.Bool("check-only", false, "with -gpu-dir: check the logits, skip the speed runs")
	gpuLayers := fs.Int("gpu-layers", -1, "with -gpu-dir: layers on the GPU in the speed runs (-1: all and the output head; the check always runs all)")
	alloc := fs.Bool("alloc", false, "our engine allocates a new logits slice each step (EvalTokens) instead of reusing one (EvalTokensInto)")
	noCheck := fs.Bool("no-check", false, "with -gpu-dir: skip the logits check")
	variants := fs.String("cpu-variants", "", "instead of the comparison with llama.cpp: our engine on each of these comma-separated CPU variants (the first is the baseline of the ratios), side by side")
	cpuDir := fs.String("cpu-dir", "", "with -cpu-variants: the directory of the variant libraries (build/gpu-lib.sh cpu)")
	kernels := fs.String("kernels", "", "comma-separated variants of our matrix kernels (ggml, avx2, avx512; all: every one this CPU runs) to run ours on, a row each; empty: the default")
	readBW := fs.Bool("readbw", true, "measure this machine's read bandwidth at 1 and 2 threads and print each decode's bytes/s against it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c := config{reps: *reps, prefill: *prefill, decode: *decode, gpu: *gpuDir != "", gpuLayers: *gpuLayers, alloc: *alloc}
	for _, m := range strings.Split(*models, ",") {
		if m != "" {
			c.models = append(c.models, m)
		}
	}
	for _, t := range strings.Split(*threads, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil || n < 1 {
			return fmt.Errorf("bad thread count %q", t)
		}
		c.threads = append(c.threads, n)
	}
	if len(c.models) == 0 || c.reps < 1 || c.prefill < 1 || c.decode < 1 {
		return fmt.Errorf("need -models and positive -reps, -prefill, -decode")
	}
	switch *kernels {
	case "":
		c.kernels = []string{""}
	case "all":
		c.kernels = ggml.KernelVariants()
	default:
		c.kernels = strings.Split(*kernels, ",")
	}
	if *variants != "" {
		vs := strings.Split(*variants, ",")
		if len(vs) < 2 || *cpuDir == "" {
			return fmt.Errorf("-cpu-variants needs two variants or more and -cpu-dir")
		}
		return runVariants(vs, *cpuDir, c, out)
	}
	if c.gpu {
		if err := loadGPU(*gpuDir, out); err != nil {
			return err
		}
		if !*noCheck {
			if err := checkGPU(c.models, c.threads[0], out); err != nil {
				return err
			}
		}
		if *checkOnly {
			return nil
		}
	}

	if *readBW && !c.gpu {
		c.readBW = map[int]float64{}
		for _, th := range []int{1, 2} {
			bw, _ := readBandwidth(th, 5)
			c.readBW[th] = bw
		}
		fmt.Fprintf(out, "read bandwidth (best of 5 sweeps of 1 GiB): %.1f GB/s at 1 thread, %.1f GB/s at 2 threads\n",
			c.readBW[1]/1e9, c.readBW[2]/1e9)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "model\tthreads\tkernels\tphase\tours tok/s\tllama.cpp tok/s\tours/llama.cpp\tpairs ours faster\tours tok/cpu-s\tllama.cpp tok/cpu-s\tours/llama.cpp\tMB/step\tours GB/s\tllama.cpp GB/s\tours/read 1t\tours/read 2t\t\n")
	for _, path := range c.models {
		for _, th := range c.threads {
			for _, k := range c.kernels {
				r, err := measure(path, th, k, c)
				if err != nil {
					return fmt.Errorf("%s, %d threads: %w", path, th, err)
				}
				name := filepath.Base(path)
				kn := r.kernels
				fmt.Fprintf(os.Stderr, "enginebench: %s, %d threads, %s kernels: prefill %.1f vs %.1f tok/s, decode %.2f vs %.2f tok/s\n",
					name, th, kn, r.ours.prefill, r.ref.prefill, r.ours.decode, r.ref.decode)
				fmt.Fprintf(tw, "%s\t%d\t%s\tprefill %d\t%.1f\t%.1f\t%.2f\t%d/%d\t%.1f\t%.1f\t%.2f\t\t\t\t\t\t\n", name, th, kn, c.prefill,
					r.ours.prefill, r.ref.prefill, r.ratio.prefill, r.faster[0], c.reps, r.oursCPU.prefill, r.refCPU.prefill, r.ratioCPU.prefill)
				bw := func(tps float64) float64 { return float64(r.stepBytes) * tps }
				frac := func(t int) string {
					if c.readBW[t] == 0 {
						return "-"
					}
					return fmt.Sprintf("%.2f", bw(r.ours.decode)/c.readBW[t])
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\tdecode %d\t%.2f\t%.2f\t%.2f\t%d/%d\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\t%s\t%s\t\n", name, th, kn, c.decode,
					r.ours.decode, r.ref.decode, r.ratio.decode, r.faster[1], c.reps, r.oursCPU.decode, r.refCPU.decode, r.ratioCPU.decode,
					float64(r.stepBytes)/1e6, bw(r.ours.decode)/1e9, bw(r.ref.decode)/1e9, frac(1), frac(2))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "(MB/step = what a decode step at the middle position reads: every layer's weights, the output head,\n"+
		" one embedding row and the K and V so far (ggml.Window.StepBytes); GB/s = MB/step x tok/s;\n"+
		" ours/read Nt = ours GB/s over the read bandwidth at N threads above)\n")
	fmt.Fprintf(out, "(medians of %d runs each, engines alternating; tok/s = tokens / wall time of the phase;\n"+
		" tok/cpu-s = tokens / CPU time of the whole process in the phase, which a busy machine disturbs less;\n"+
		" ours/llama.cpp = median of the ratios of back-to-back pairs, one pair per run;\n"+
		" pairs ours faster = in how many of those pairs our engine took less wall time)\n", c.reps)
	return nil
}

type speeds struct{ prefill, decode float64 } // tokens per second

// result holds each engine's median speeds and, per measure (wall, CPU), the
// median over runs of the ratio ours/llama.cpp of one run's back-to-back
// pair. A ratio of medians would compare runs minutes apart; on a shared
// machine whose load swings by 2x within a minute that is mostly noise, while
// the two halves of a pair see about the same load.
// faster counts the pairs (prefill, decode) in which ours took less wall
// time: with the median it tells a real gap from the noise of a few pairs.
type result struct {
	ours, ref, oursCPU, refCPU, ratio, ratioCPU speeds
	faster                                      [2]int
	kernels                                     string // the variant ours ran on
	stepBytes                                   int64  // what a decode step reads (Window.StepBytes)
}

// engine is the part of each engine the benchmark drives.
type engine interface {
	clear()
	eval(tokens []int32, pos int) ([]float32, error) // last token's logits
}

type ours struct{ w *ggml.Window }

func (o ours) clear() { o.w.KVClear() }
func (o ours) eval(t []int32, pos int) ([]float32, error) {
	return o.w.EvalTokens(t, pos)
}

// oursInto is ours reusing its logits' memory from step to step, as the
// product's decode loop does and as llama.cpp hands out its own output
// buffer: the speed runs time the engines, not the garbage collector.
// -alloc times ours instead (a new slice per step).
type oursInto struct {
	w   *ggml.Window
	buf []float32
}

func (o *oursInto) clear() { o.w.KVClear() }
func (o *oursInto) eval(t []int32, pos int) ([]float32, error) {
	var err error
	o.buf, err = o.w.EvalTokensInto(o.buf, t, pos)
	return o.buf, err
}

type ref struct{ r *llama.Reference }

func (r ref) clear() { r.r.KVClear() }
func (r ref) eval(t []int32, pos int) ([]float32, error) {
	return r.r.LastLogits(t, pos)
}

const text = "Once upon a time, in a small village by the sea, there lived an old fisherman who counted the waves every morning. "

func measure(path string, threads int, kernels string, c config) (result, error) {
	nCtx := c.prefill + c.decode + 1
	m, err := ggml.Open(path)
	if err != nil {
		return result{}, err
	}
	defer m.Close()
	info := m.Info()
	wp := ggml.WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, NCtx: nCtx, Threads: threads, Kernels: kernels}
	if kernels == "" {
		if wp.Kernels, err = ggml.Kernels(); err != nil {
			return result{}, err
		}
	}
	refGPU := 0
	switch {
	case c.gpu && c.gpuLayers < 0:
		wp.GPULayers, wp.OutputGPU, refGPU = allLayers(info.NLayer), true, info.NLayer+1
	case c.gpu:
		wp.GPULayers, refGPU = allLayers(min(c.gpuLayers, info.NLayer)), min(c.gpuLayers, info.NLayer)
	}
	r, err := llama.NewReference(path, llama.ReferenceParams{NCtx: nCtx, Threads: threads, Batch: max(c.prefill, 1), GPULayers: refGPU})
	if err != nil {
		return result{}, err
	}
	if !c.gpu {
		defer func() { _ = r.Close() }() // on CUDA llama_free crashed (SIGSEGV): see gpu.go
	}
	w, err := m.NewWindow(wp)
	if err != nil {
		return result{}, err
	}
	defer w.Close()

	prompt, err := benchPrompt(r, c.prefill)
	if err != nil {
		return result{}, err
	}
	// The decode tokens: llama.cpp's greedy continuation, so both engines
	// see realistic, identical inputs.
	decode, err := greedy(ref{r}, prompt, c.decode)
	if err != nil {
		return result{}, err
	}

	engines := []engine{&oursInto{w: w}, ref{r}}
	if c.alloc {
		engines[0] = ours{w}
	}
	times := make([][2][]time.Duration, 2) // [engine][phase]
	cpus := make([][2][]time.Duration, 2)
	for rep := -1; rep < c.reps; rep++ { // rep -1 warms up: pages the weights in, builds graphs
		order := []int{0, 1}
		if rep%2 == 1 {
			order = []int{1, 0} // alternate who goes first, so neither always follows the other
		}
		// The two engines run back to back on each phase, prefill against
		// prefill and each decode step against the same step, so the two
		// halves of a pair see about the same machine load.
		var wall, cpu [2][2]time.Duration // [engine][phase]
		for _, i := range order {
			engines[i].clear()
		}
		for _, i := range order {
			t0, c0 := time.Now(), cpuTime()
			if _, err := engines[i].eval(prompt, 0); err != nil {
				return result{}, err
			}
			wall[i][0], cpu[i][0] = time.Since(t0), cpuTime()-c0
		}
		steps := decode
		if rep < 0 {
			steps = decode[:min(2, len(decode))]
		}
		for j, tok := range steps {
			for _, i := range order {
				t0, c0 := time.Now(), cpuTime()
				if _, err := engines[i].eval([]int32{tok}, c.prefill+j); err != nil {
					return result{}, err
				}
				wall[i][1] += time.Since(t0)
				cpu[i][1] += cpuTime() - c0
			}
		}
		if rep < 0 {
			continue
		}
		for i := range engines {
			for ph := range 2 {
				times[i][ph] = append(times[i][ph], wall[i][ph])
				cpus[i][ph] = append(cpus[i][ph], cpu[i][ph])
			}
		}
	}
	tps := func(n int, ds []time.Duration) float64 { return float64(n) / median(ds).Seconds() }
	// ratio: tokens/s ours over llama.cpp = time llama.cpp over time ours.
	ratio := func(ds [][2][]time.Duration, phase int) float64 {
		rs := make([]float64, len(ds[0][phase]))
		for k := range rs {
			rs[k] = ds[1][phase][k].Seconds() / ds[0][phase][k].Seconds()
		}
		return medianFloat(rs)
	}
	var faster [2]int
	for ph := range 2 {
		for k := range times[0][ph] {
			if times[0][ph][k] < times[1][ph][k] {
				faster[ph]++
			}
		}
	}
	return result{
		kernels:   wp.Kernels,
		stepBytes: w.StepBytes(c.prefill + c.decode/2),
		faster:    faster,
		ours:      speeds{tps(c.prefill, times[0][0]), tps(c.decode, times[0][1])},
		ref:       speeds{tps(c.prefill, times[1][0]), tps(c.decode, times[1][1])},
		oursCPU:   speeds{tps(c.prefill, cpus[0][0]), tps(c.decode, cpus[0][1])},
		refCPU:    speeds{tps(c.prefill, cpus[1][0]), tps(c.decode, cpus[1][1])},
		ratio:     speeds{ratio(times, 0), ratio(times, 1)},
		ratioCPU:  speeds{ratio(cpus, 0), ratio(cpus, 1)},
	}, nil
}

// benchPrompt is the prompt both engines evaluate: the fixed text,
// tokenized by the model, n tokens of it.
func benchPrompt(r *llama.Reference, n int) ([]int32, error) {
	var prompt []int32
	for len(prompt) < n {
		more, err := r.Vocab().Tokenize(strings.Repeat(text, 4), len(prompt) == 0, false)
		if err != nil {
			return nil, err
		}
		prompt = append(prompt, more...)
	}
	return prompt[:n], nil
}

func greedy(e engine, prompt []int32, n int) ([]int32, error) {
	e.clear()
	logits, err := e.eval(prompt, 0)
	if err != nil {
		return nil, err
	}
	var out []int32
	for len(out) < n {
		best := int32(argmax(logits))
		out = append(out, best)
		if logits, err = e.eval([]int32{best}, len(prompt)+len(out)-1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianFloat(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
