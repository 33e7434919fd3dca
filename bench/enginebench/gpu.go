package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"homering/engine/ggml"
	"homering/engine/llama"
)

// gpuTolerance is the largest relative logit error (max |gpu − cpu| over
// max |cpu| of one evaluation) accepted between a window wholly on the GPU
// and the same window on the CPU, per weight type. Most of it is the CPU's
// own 8-bit quantization of activations for quantized types (measured on
// lavapipe, gpu-findings: F32 7.4e-4, F16 4.7e-3, Q8_0 1.9e-2, Q4_0 1.7e-2,
// Q4_K 2.9e-2, Q6_K 2.6e-2); the bounds leave about 2x room for another
// GPU's kernels and accumulation order.
// Measured on an H100 (CUDA 13, 2026-11-26), 4-layer llama and qwen3 and the
// ~1 GB llamas: F32 7.2e-4, F16 1.4e-3, Q8_0 2.9e-2, Q4_0 5.2e-2, Q4_K
// 6.0e-2, Q6_K 3.2e-2, and llama.cpp on the same GPU had exactly the same
// error: its logits and ours were bit-identical there. The bounds are about
// twice the largest error seen on either GPU.
var gpuTolerance = map[string]float64{
	"F32":  2e-3,
	"F16":  1e-2,
	"Q8_0": 6e-2,
	"Q4_0": 1e-1,
	"Q4_K": 1.2e-1, // ggml's type name is q4_K: looked up in upper case
	"Q6_K": 8e-2,
}

// pairTolerance bounds the relative error between our GPU window and
// llama.cpp on the same GPU through the same library: 0 on CUDA (the same
// kernels on the same graph), 4.2e-5 at most on lavapipe.
const pairTolerance = 1e-4

func allLayers(n int) []int {
	ls := make([]int, n)
	for i := range ls {
		ls[i] = i
	}
	return ls
}

func loadGPU(dir string, out io.Writer) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if ggml.LoadBackends(abs) == 0 {
		return fmt.Errorf("no GPU found through the backend libraries in %s (is the driver installed, and the library built for this GPU?)", abs)
	}
	for _, g := range ggml.GPUDevices() {
		fmt.Fprintf(out, "GPU %s: %s, %.1f of %.1f GiB free, integrated %v\n", g.Name, g.Description,
			float64(g.FreeBytes)/(1<<30), float64(g.TotalBytes)/(1<<30), g.Integrated)
	}
	return nil
}

// checkGPU compares, per model, the logits of a 32-token prompt and 16
// decode steps of three runs: our window on the CPU, our window wholly on the
// GPU (output head included) and llama.cpp wholly on the GPU, all fed the
// CPU window's greedy tokens. It prints a table and fails when our GPU
// window is off the CPU's by more than the type's tolerance.
func checkGPU(models []string, threads int, out io.Writer) error {
	const prompt, steps = 32, 16
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "model\ttype\tours GPU vs CPU\ttolerance\tllama.cpp GPU vs CPU\tours GPU vs llama.cpp GPU\tgreedy agree GPU/CPU\t\n")
	var bad []string
	for _, path := range models {
		nCtx := prompt + steps + 1
		info, toks, cpu, gpu, err := oursCPUAndGPU(path, prompt, steps, threads)
		if err != nil {
			return err
		}
		r, err := llama.NewReference(path, llama.ReferenceParams{NCtx: nCtx, Threads: threads, Batch: prompt, GPULayers: info.NLayer + 1})
		if err != nil {
			return err
		}
		ref, err := runSteps(ref{r}, toks, prompt)
		// Not closed: llama_free of a context on the CUDA backend crashed
		// (SIGSEGV in llama_free, H100, CUDA 13, 2026-11-26); the process
		// ends after the benchmark anyway.
		if err != nil {
			return err
		}
		errGPU, agree := relErr(gpu, cpu)
		errRef, _ := relErr(ref, cpu)
		errPair, _ := relErr(gpu, ref)
		tol, ok := gpuTolerance[strings.ToUpper(info.TypeName)]
		if !ok {
			tol = gpuTolerance["Q4_K"]
		}
		if errGPU > tol || math.IsNaN(errGPU) {
			bad = append(bad, fmt.Sprintf("%s (%s): %.2e > %.0e from the CPU", filepath.Base(path), info.TypeName, errGPU, tol))
		}
		if errPair > pairTolerance || math.IsNaN(errPair) {
			bad = append(bad, fmt.Sprintf("%s (%s): %.2e > %.0e from llama.cpp on the GPU", filepath.Base(path), info.TypeName, errPair, pairTolerance))
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2e\t%.0e\t%.2e\t%.2e\t%d/%d\t\n", filepath.Base(path), info.TypeName, errGPU, tol, errRef, errPair, agree, len(cpu))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "(relative error = max |a − b| / max |b| over %d evaluations: the %d-token prompt, then %d decode steps of the CPU's greedy tokens;\n"+
		" greedy agree = evaluations whose arg max is the same on our GPU and CPU windows)\n", steps+1, prompt, steps)
	if len(bad) > 0 {
		return errors.New("GPU logits outside the tolerance: " + strings.Join(bad, "; "))
	}
	return nil
}

// oursCPUAndGPU runs our window over path's model on the CPU, then wholly on
// the GPU (output head included), fed the CPU window's greedy continuation
// of a prompt, and returns the tokens and both runs' logits.
func oursCPUAndGPU(path string, prompt, steps, threads int) (info ggml.ModelInfo, toks []int32, cpu, gpu [][]float32, err error) {
	m, err := ggml.Open(path)
	if err != nil {
		return info, nil, nil, nil, err
	}
	defer func() {
		if cerr := m.Close(); err == nil {
			err = cerr
		}
	}()
	info = m.Info()
	base := ggml.WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, NCtx: prompt + steps + 1, Threads: threads}
	logits := func(wp ggml.WindowParams, toks []int32, cont int) (_ []int32, _ [][]float32, err error) {
		w, err := m.NewWindow(wp)
		if err != nil {
			return nil, nil, err
		}
		defer func() {
			if cerr := w.Close(); err == nil {
				err = cerr
			}
		}()
		if cont > 0 {
			more, err := greedy(ours{w}, toks, cont)
			if err != nil {
				return nil, nil, err
			}
			toks = append(toks, more...)
		}
		ls, err := runSteps(ours{w}, toks, prompt)
		return toks, ls, err
	}
	if toks, err = promptTokens(path, prompt); err != nil {
		return info, nil, nil, nil, err
	}
	// The CPU window's own greedy continuation is the input of all runs.
	if toks, cpu, err = logits(base, toks, steps); err != nil {
		return info, nil, nil, nil, err
	}
	gp := base
	gp.GPULayers, gp.OutputGPU = allLayers(info.NLayer), true
	_, gpu, err = logits(gp, toks, 0)
	return info, toks, cpu, gpu, err
}

// runSteps evaluates toks[:prompt] as one batch, then each later token
// alone, and returns the logits of each evaluation.
func runSteps(e engine, toks []int32, prompt int) ([][]float32, error) {
	e.clear()
	l, err := e.eval(toks[:prompt], 0)
	if err != nil {
		return nil, err
	}
	out := [][]float32{append([]float32(nil), l...)}
	for i := prompt; i < len(toks); i++ {
		if l, err = e.eval(toks[i:i+1], i); err != nil {
			return nil, err
		}
		out = append(out, append([]float32(nil), l...))
	}
	return out, nil
}

// relErr is the largest relative error of a against b over the
// evaluations, and in how many of them both have the same arg max.
func relErr(a, b [][]float32) (float64, int) {
	worst, agree := 0.0, 0
	for i := range b {
		var diff, scale float64
		for j := range b[i] {
			diff = max(diff, math.Abs(float64(a[i][j]-b[i][j])))
			scale = max(scale, math.Abs(float64(b[i][j])))
		}
		if math.IsNaN(diff) {
			return math.NaN(), 0
		}
		worst = max(worst, diff/scale)
		if argmax(a[i]) == argmax(b[i]) {
			agree++
		}
	}
	return worst, agree
}

func argmax(xs []float32) int {
	best := 0
	for i, v := range xs {
		if v > xs[best] {
			best = i
		}
	}
	return best
}

// promptTokens tokenizes the benchmark's text to n tokens with the model's
// own vocabulary.
func promptTokens(path string, n int) ([]int32, error) {
	v, err := llama.LoadVocab(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = v.Close() }() // read-only: nothing to lose
	var toks []int32
	for len(toks) < n {
		more, err := v.Tokenize(strings.Repeat(text, 4), len(toks) == 0, false)
		if err != nil {
			return nil, err
		}
		toks = append(toks, more...)
	}
	return toks[:n], nil
}
