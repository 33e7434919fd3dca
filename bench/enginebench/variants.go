package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"homering/engine/ggml"
	"homering/engine/llama"
)

// The CPU variants' comparison (issues 16 and 22): our engine on each of
// ggml's CPU variant libraries (build/gpu-lib.sh cpu: x64 = baseline
// x86-64, haswell = AVX2/FMA, icelake = AVX-512 VNNI), side by side. The
// CPU backend is chosen once per process, so each run is a child process
// of its own (this program with envVariantRun set, loading the variant's
// library with ggml.UseCPU); a repetition runs every variant once, in alternating order,
// and the ratio to the baseline is the median over repetitions of the
// ratios within one repetition.

// envVariantRun, set to "model,threads,prefill,decode,tokens-file,library", makes
// this program one variant child: it opens the model, warms up (a short
// prompt and two steps, which page the weights in), times one prefill and
// the decode steps of the tokens in tokens-file, and prints a variantRun.
const envVariantRun = "HOMERING_ENGINEBENCH_VARIANT_RUN"

type variantRun struct {
	Variant            string
	Prefill, Decode    float64 // seconds of wall time
	PrefillCPU, DecCPU float64 // seconds of CPU time
}

func variantChild(spec string, out io.Writer) error {
	f := strings.Split(spec, ",")
	if len(f) != 6 {
		return fmt.Errorf("%s=%q: want model,threads,prefill,decode,tokens-file,library", envVariantRun, spec)
	}
	threads, _ := strconv.Atoi(f[1])
	prefill, _ := strconv.Atoi(f[2])
	decode, _ := strconv.Atoi(f[3])
	b, err := os.ReadFile(f[4])
	if err != nil {
		return err
	}
	var toks []int32
	if err := json.Unmarshal(b, &toks); err != nil {
		return err
	}
	if len(toks) < prefill+decode {
		return fmt.Errorf("%d tokens in %s, need %d", len(toks), f[4], prefill+decode)
	}
	variant := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(filepath.Base(f[5]), "lib"), "ggml-cpu-"), filepath.Ext(f[5]))
	if err := ggml.UseCPU(f[5], variant); err != nil {
		return err
	}
	m, err := ggml.Open(f[0])
	if err != nil {
		return err
	}
	defer m.Close()
	info := m.Info()
	w, err := m.NewWindow(ggml.WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true,
		NCtx: prefill + decode + 1, Threads: threads})
	if err != nil {
		return err
	}
	defer w.Close()
	e := ours{w}
	// Warm-up: every weight read once, the decode graphs built.
	if _, err := e.eval(toks[:min(8, prefill)], 0); err != nil {
		return err
	}
	for j := range 2 {
		if _, err := e.eval(toks[prefill+j:prefill+j+1], min(8, prefill)+j); err != nil {
			return err
		}
	}
	e.clear()
	r := variantRun{Variant: ggml.CPUVariant()}
	t0, c0 := time.Now(), cpuTime()
	if _, err := e.eval(toks[:prefill], 0); err != nil {
		return err
	}
	r.Prefill, r.PrefillCPU = time.Since(t0).Seconds(), (cpuTime() - c0).Seconds()
	t0, c0 = time.Now(), cpuTime()
	for j := range decode {
		if _, err := e.eval(toks[prefill+j:prefill+j+1], prefill+j); err != nil {
			return err
		}
	}
	r.Decode, r.DecCPU = time.Since(t0).Seconds(), (cpuTime() - c0).Seconds()
	return json.NewEncoder(out).Encode(r)
}

// benchTokens is the prompt (the fixed text, tokenized) and llama.cpp's
// greedy continuation, as the engine comparison feeds them.
func benchTokens(path string, c config) ([]int32, error) {
	r, err := llama.NewReference(path, llama.ReferenceParams{NCtx: c.prefill + c.decode + 1, Threads: c.threads[0], Batch: c.prefill})
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	prompt, err := benchPrompt(r, c.prefill)
	if err != nil {
		return nil, err
	}
	dec, err := greedy(ref{r}, prompt, c.decode)
	if err != nil {
		return nil, err
	}
	return append(prompt, dec...), nil
}

func runVariants(asked []string, dir string, c config, out io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	// Only the variants this CPU runs (ggml_backend_score > 0).
	var variants []string
	for _, v := range asked {
		switch s, err := ggml.CPUScore(variantLib(dir, v)); {
		case err != nil:
			return err
		case s == 0:
			fmt.Fprintf(out, "(this CPU cannot run the %s variant: left out)\n", v)
		default:
			variants = append(variants, v)
		}
	}
	if len(variants) < 2 {
		return fmt.Errorf("this CPU runs %d of the variants %v", len(variants), asked)
	}
	tmp, err := os.MkdirTemp("", "enginebench-variants")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "model\tthreads\tphase\t")
	for _, v := range variants {
		fmt.Fprintf(tw, "%s tok/s\t", v)
	}
	for _, v := range variants[1:] {
		fmt.Fprintf(tw, "%s/%s\t", v, variants[0])
	}
	fmt.Fprintf(tw, "\n")
	for _, path := range c.models {
		toks, err := benchTokens(path, c)
		if err != nil {
			return err
		}
		tf := filepath.Join(tmp, "tokens.json")
		b, _ := json.Marshal(toks)
		if err := os.WriteFile(tf, b, 0o644); err != nil {
			return err
		}
		for _, th := range c.threads {
			runs := make([][]variantRun, len(variants)) // [variant][rep]
			for rep := range c.reps {
				order := make([]int, len(variants))
				for i := range order {
					order[i] = i
					if rep%2 == 1 {
						order[i] = len(variants) - 1 - i
					}
				}
				for _, i := range order {
					cmd := exec.Command(exe)
					cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d,%d,%d,%s,%s", envVariantRun,
						path, th, c.prefill, c.decode, tf, variantLib(dir, variants[i])))
					cmd.Stderr = os.Stderr
					b, err := cmd.Output()
					if err != nil {
						return fmt.Errorf("%s on %s: %w", path, variants[i], err)
					}
					var r variantRun
					if err := json.Unmarshal(b, &r); err != nil {
						return fmt.Errorf("%s on %s: %w (%q)", path, variants[i], err, b)
					}
					if r.Variant != variants[i] {
						return fmt.Errorf("asked for the %s variant, the child ran %s", variants[i], r.Variant)
					}
					runs[i] = append(runs[i], r)
				}
			}
			name := filepath.Base(path)
			for ph, phase := range []string{fmt.Sprintf("prefill %d", c.prefill), fmt.Sprintf("decode %d", c.decode)} {
				n := float64(c.prefill)
				sec := func(r variantRun) float64 { return r.Prefill }
				if ph == 1 {
					n, sec = float64(c.decode), func(r variantRun) float64 { return r.Decode }
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t", name, th, phase)
				for i := range variants {
					var ts []float64
					for _, r := range runs[i] {
						ts = append(ts, sec(r))
					}
					fmt.Fprintf(tw, "%.2f\t", n/medianFloat(ts))
				}
				for i := range variants[1:] {
					var rs []float64
					for k := range runs[0] {
						rs = append(rs, sec(runs[0][k])/sec(runs[i+1][k]))
					}
					fmt.Fprintf(tw, "%.2f\t", medianFloat(rs))
				}
				fmt.Fprintf(tw, "\n")
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "(our engine on each CPU variant library in %s, one child process per run; medians of %d runs,\n"+
		" variants alternating; a ratio is the median over runs of the baseline's time over the variant's)\n", dir, c.reps)
	return nil
}

// variantLib is the file of a variant library in dir (as build/gpu-lib.sh
// names them).
func variantLib(dir, variant string) string {
	if runtime.GOOS == "windows" {
		return filepath.Join(dir, "ggml-cpu-"+variant+".dll")
	}
	return filepath.Join(dir, "libggml-cpu-"+variant+".so")
}
