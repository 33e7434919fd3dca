// Unix only: page faults and CPU time come from getrusage.

//go:build unix

package ggml

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"homering/engine/modelgen"
)

// pageFaults is the process's minor + major page fault count.
func pageFaults() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Minflt + ru.Majflt
}

// cpuTime is the process's user+system CPU time: on a busy shared machine
// the CPU time of a one-thread evaluation is a steadier number than its wall
// time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Benchmarks report ms/token (decode: one token per evaluation on a filled
// cache) with one thread, the stable setting on a shared 2-core machine.

func benchDecode(b *testing.B, path string, split bool, threads int) {
	m, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	info := m.Info()
	var ws []*Window
	bounds := [][2]int{{0, info.NLayer}}
	if split {
		bounds = [][2]int{{0, info.NLayer / 2}, {info.NLayer / 2, info.NLayer}}
	}
	for i, bd := range bounds {
		w, err := m.NewWindow(WindowParams{First: bd[0], Last: bd[1], Embed: i == 0, Output: i == len(bounds)-1, NCtx: 512, Threads: threads})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		ws = append(ws, w)
	}
	eval := chain(ws...)
	p := prompt(info.NVocab)[:8]
	if _, err := eval(p, 0); err != nil {
		b.Fatal(err)
	}
	pos := len(p)
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if pos >= 500 {
			for _, w := range ws {
				w.KVTruncate(len(p))
			}
			pos = len(p)
		}
		if _, err := eval([]int32{int32(3 + i%100)}, pos); err != nil {
			b.Fatal(err)
		}
		pos++
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/token")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1e3/float64(b.N), "cpu-ms/token")
}

func BenchmarkDecodeStories(b *testing.B)      { benchDecode(b, stories, false, 1) }
func BenchmarkDecodeStoriesSplit(b *testing.B) { benchDecode(b, stories, true, 1) }
func BenchmarkDecode1GQ8(b *testing.B)         { benchDecode(b, bigModel, false, 1) }
func BenchmarkDecode1GQ8Split(b *testing.B)    { benchDecode(b, bigModel, true, 1) }

// BenchmarkPrefill32 is prompt processing: 32 tokens in one evaluation.
func BenchmarkPrefill32(b *testing.B) {
	m, err := Open(bigModel)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	info := m.Info()
	w, err := m.NewWindow(WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, NCtx: 256, Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	toks := make([]int32, 32)
	for i := range toks {
		toks[i] = int32(3 + i)
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		w.KVClear()
		if _, err := w.EvalTokens(toks, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N)/float64(len(toks)), "ms/token")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1e3/float64(b.N)/float64(len(toks)), "cpu-ms/token")
}

// BenchmarkColdWindow compares, for the second half of the 1 GB model's
// layers after dropping it from the page cache: evaluating cold (demand
// faults), Prefetch alone, evaluating right after Prefetch, and a warm
// evaluation (everything resident and mapped) as the baseline.
func BenchmarkColdWindow(b *testing.B) {
	path := bigModel
	m, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	info := m.Info()
	w, err := m.NewWindow(WindowParams{First: info.NLayer / 2, Last: info.NLayer, NCtx: 16, Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	hidden := make([]float32, info.NEmbd)
	drop := func() {
		if err := m.Release([]ByteRange{{0, info.FileSize}}); err != nil {
			b.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := fadviseDontNeed(f); err != nil {
			b.Fatal(err)
		}
	}
	var cold, pre, after, warm float64
	var coldFaults, afterFaults int64
	for i := 0; i < b.N; i++ {
		drop()
		w.KVClear()
		t0 := nowMs()
		f0 := pageFaults()
		if _, err := w.EvalHidden(hidden, 0); err != nil {
			b.Fatal(err)
		}
		cold += nowMs() - t0
		coldFaults += pageFaults() - f0
		drop()
		w.KVClear()
		t0 = nowMs()
		if err := m.Prefetch(w.WeightRanges()); err != nil {
			b.Fatal(err)
		}
		t1 := nowMs()
		f0 = pageFaults()
		if _, err := w.EvalHidden(hidden, 0); err != nil {
			b.Fatal(err)
		}
		pre += t1 - t0
		after += nowMs() - t1
		afterFaults += pageFaults() - f0
		w.KVClear()
		t0 = nowMs()
		if _, err := w.EvalHidden(hidden, 0); err != nil {
			b.Fatal(err)
		}
		warm += nowMs() - t0
	}
	n := float64(b.N)
	b.ReportMetric(cold/n, "cold-eval-ms")
	b.ReportMetric(pre/n, "prefetch-ms")
	b.ReportMetric(after/n, "eval-after-prefetch-ms")
	b.ReportMetric(warm/n, "warm-eval-ms")
	b.ReportMetric(float64(coldFaults)/n, "cold-eval-faults")
	b.ReportMetric(float64(afterFaults)/n, "after-prefetch-faults")
}

// BenchmarkPromptKernels times a 128-token prompt through a generated 4-layer
// llama of the 1 GB models' shape (n_embd 2048, ff 5632, 16/4 heads) in Q8_0,
// Q4_K and Q6_K, one thread, on gemm.c's kernels and on ggml's (GGMLMatMul)
// back to back, and reports each side's ms per prompt and the median of the
// pairs' ratios ggml/ours (> 1: ours faster).
func BenchmarkPromptKernels(b *testing.B) {
	for _, typ := range []string{"Q8_0", "Q4_K", "Q6_K"} {
		b.Run(typ, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "llama-4l-"+typ+".gguf")
			err := modelgen.Generate(path, modelgen.Config{Arch: "llama", Layers: 4, Embd: 2048, FF: 5632,
				Heads: 16, KVHeads: 4, Vocab: 32000, Type: typ, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			m, err := Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			p := WindowParams{First: 0, Last: 4, Embed: true, NCtx: 256, Threads: 1}
			ours, err := m.NewWindow(p)
			if err != nil {
				b.Fatal(err)
			}
			defer ours.Close()
			p.GGMLMatMul = true
			theirs, err := m.NewWindow(p)
			if err != nil {
				b.Fatal(err)
			}
			defer theirs.Close()
			toks := make([]int32, 128)
			for i := range toks {
				toks[i] = int32(3 + i*37%1000)
			}
			run := func(w *Window) time.Duration {
				w.KVClear()
				t0 := time.Now()
				if _, err := w.EvalTokens(toks, 0); err != nil {
					b.Fatal(err)
				}
				return time.Since(t0)
			}
			run(ours) // pages the layers in, builds the graphs
			run(theirs)
			b.ResetTimer()
			var ratios []float64
			var tOurs, tTheirs time.Duration
			for i := 0; i < b.N; i++ {
				var a, t time.Duration
				if i%2 == 0 {
					a, t = run(ours), run(theirs)
				} else {
					t, a = run(theirs), run(ours)
				}
				tOurs += a
				tTheirs += t
				ratios = append(ratios, t.Seconds()/a.Seconds())
			}
			slices.Sort(ratios)
			b.ReportMetric(float64(tOurs.Microseconds())/1e3/float64(b.N), "ms/prompt-ours")
			b.ReportMetric(float64(tTheirs.Microseconds())/1e3/float64(b.N), "ms/prompt-ggml")
			b.ReportMetric(ratios[len(ratios)/2], "ggml/ours")
		})
	}
}

// BenchmarkTokenKernels times token steps of n = 1 to 4 tokens (decode, and
// speculation's verification passes) on a 32-token cache
// through a generated one-layer llama of a 7B's matrix shapes (n_embd 4096,
// ff 11008: 4096x4096 and 4096x11008 weights, ~0.2 GB in Q8_0) in Q8_0, Q4_K,
// Q5_K and Q6_K, one thread, on each variant of gemm.c's kernels this CPU runs and
// on ggml's (GGMLMatMul), back to back, and reports each side's ms per step,
// the bytes per second ours reads (Window.StepBytes: the weights, one
// embedding row, the KV), and the median of the pairs' ratios ggml/ours
// (> 1: ours faster).
func BenchmarkTokenKernels(b *testing.B) {
	for _, typ := range []string{"Q8_0", "Q4_K", "Q5_K", "Q6_K"} {
		path := filepath.Join(b.TempDir(), "llama-7b1l-"+typ+".gguf")
		err := modelgen.Generate(path, modelgen.Config{Arch: "llama", Layers: 1, Embd: 4096, FF: 11008,
			Heads: 32, KVHeads: 32, Vocab: 512, Type: typ, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		for _, v := range KernelVariants() {
			if v == KernelsGGML {
				continue
			}
			for n := 1; n <= 4; n++ {
				b.Run(fmt.Sprintf("%s/%s/n=%d", typ, v, n), func(b *testing.B) { benchTokenKernels(b, path, v, n) })
			}
		}
		if err := os.Remove(path); err != nil {
			b.Fatal(err)
		}
	}
}

func benchTokenKernels(b *testing.B, path, variant string, n int) {
	m, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	p := WindowParams{First: 0, Last: 1, Embed: true, Output: true, NCtx: 256, Threads: 1, Kernels: variant}
	ours, err := m.NewWindow(p)
	if err != nil {
		b.Fatal(err)
	}
	defer ours.Close()
	p.GGMLMatMul = true
	theirs, err := m.NewWindow(p)
	if err != nil {
		b.Fatal(err)
	}
	defer theirs.Close()
	wbytes := ours.StepBytes(32) // what a step at position 32 reads
	toks := make([]int32, n)
	run := func(w *Window, tok int32) time.Duration {
		w.KVTruncate(32)
		for i := range toks {
			toks[i] = tok + int32(i)
		}
		t0 := time.Now()
		if _, err := w.EvalTokens(toks, 32); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	for _, w := range []*Window{ours, theirs} {
		if _, err := w.EvalTokens(prompt(512)[:32], 0); err != nil {
			b.Fatal(err)
		}
		run(w, 3) // pages the weights in, builds the graph
	}
	b.ResetTimer()
	var ratios []float64
	var tOurs, tTheirs time.Duration
	for i := 0; i < b.N; i++ {
		tok := int32(3 + i%200)
		var a, t time.Duration
		if i%2 == 0 {
			a, t = run(ours, tok), run(theirs, tok)
		} else {
			t, a = run(theirs, tok), run(ours, tok)
		}
		tOurs += a
		tTheirs += t
		ratios = append(ratios, t.Seconds()/a.Seconds())
	}
	slices.Sort(ratios)
	b.ReportMetric(float64(tOurs.Microseconds())/1e3/float64(b.N), "ms/step-ours")
	b.ReportMetric(float64(tTheirs.Microseconds())/1e3/float64(b.N), "ms/step-ggml")
	b.ReportMetric(float64(wbytes)*float64(b.N)/tOurs.Seconds()/1e9, "GB/s-ours")
	b.ReportMetric(ratios[len(ratios)/2], "ggml/ours")
}
