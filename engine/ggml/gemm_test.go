package ggml

import (
	"math"
	"path/filepath"
	"testing"

	"homering/engine/modelgen"
)

// ourKernelsT is every variant of our kernels this CPU runs under the CPU
// backend in use, ggml's own left out; at least one (the tests must test
// something: build/env.sh's backend has AVX2).
func ourKernelsT(t *testing.T) []string {
	t.Helper()
	var vs []string
	for _, v := range KernelVariants() {
		if v != KernelsGGML {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		t.Fatalf("this CPU runs none of our kernel variants under the %s CPU backend", CPUVariant())
	}
	return vs
}

// kernelWindowsT opens one window of p per variant of our kernels and one
// on ggml's (GGMLMatMul), to compare their outputs bit for bit.
func kernelWindowsT(t *testing.T, m *Model, p WindowParams, variants []string) (ours []*Window, theirs *Window) {
	t.Helper()
	for _, v := range variants {
		p.Kernels = v
		ours = append(ours, newWindowT(t, m, p))
	}
	p.GGMLMatMul = true
	return ours, newWindowT(t, m, p)
}

// differingBits counts the positions where a and b differ bit for bit.
func differingBits(a, b []float32) int {
	differ := 0
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			differ++
		}
	}
	return differ
}

// TestPromptKernelsMatchGGML: a window on gemm.c's kernels, each variant
// this CPU runs, gives the same bits as one on ggml's (tinyBLAS for Q8_0
// prompts, ggml_vec_dot_q8_0_q8_0 for Q8_0 decode steps,
// ggml_vec_dot_q4_K_q8_K, _q5_K_q8_K and _q6_K_q8_K) for batches of 1 to 70
// tokens (1 to 4: the token-step kernels; 5 up: the prompt kernels) at 1
// and 2 threads, on Q8_0, Q4_K, Q5_K and Q6_K models, and the kernels
// really ran: 7 products per layer plus the output head for every batch. The generated
// 1003-token vocabulary gives an output head whose rows end in a partial
// 4-row quad and a partial 16-row chunk; n_embd 288 and ff 800 give rows of
// an odd number of Q8_0 blocks.
func TestPromptKernelsMatchGGML(t *testing.T) {
	dir := t.TempDir()
	paths := []string{
		"../../testdata/models/llama-Q8_0.gguf",
		"../../testdata/models/llama-Q4_K.gguf",
		"../../testdata/models/mistral-Q4_K.gguf",
		"../../testdata/models/qwen2-Q8_0.gguf",
		"../../testdata/models/qwen3-Q4_K.gguf",
		"../../testdata/models/llama-Q6_K.gguf",
		"../../testdata/models/qwen2-Q6_K.gguf",
		"../../testdata/models/llama-Q5_K.gguf",
	}
	for _, typ := range []string{"Q8_0", "Q4_K", "Q5_K", "Q6_K"} {
		p := filepath.Join(dir, "odd-"+typ+".gguf")
		err := modelgen.Generate(p, modelgen.Config{Arch: "llama", Layers: 2, Embd: 256, FF: 768, Heads: 4,
			KVHeads: 2, Vocab: 1003, Type: typ, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	// n_embd 288: 9 Q8_0 blocks per row of Q, K, V, gate and up, an odd
	// count (each thread's prepared quads must stay 32-byte aligned).
	p := filepath.Join(dir, "odd-embd-Q8_0.gguf")
	err := modelgen.Generate(p, modelgen.Config{Arch: "llama", Layers: 2, Embd: 288, FF: 800, Heads: 4,
		KVHeads: 2, Vocab: 1003, Type: "Q8_0", Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, p)
	batches := []int{2, 1, 3, 4, 5, 17, 1, 33, 4, 70, 1}
	variants := ourKernelsT(t)
	for _, path := range paths {
		for _, threads := range []int{1, 2} {
			t.Run(filepath.Base(path)+"/threads="+string(rune('0'+threads)), func(t *testing.T) {
				m := openT(t, path)
				info := m.Info()
				p := WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, AllLogits: true,
					NCtx: 256, Threads: threads}
				ours, theirs := kernelWindowsT(t, m, p, variants)
				pos := 0
				for _, n := range batches {
					toks := make([]int32, n)
					for i := range toks {
						toks[i] = int32((pos + i) * 37 % info.NVocab)
					}
					b, err := theirs.EvalTokens(toks, pos)
					if err != nil {
						t.Fatal(err)
					}
					for vi, w := range ours {
						a, err := w.EvalTokens(toks, pos)
						if err != nil {
							t.Fatal(err)
						}
						if differ := differingBits(a, b); differ > 0 {
							t.Errorf("%s kernels, batch of %d at %d: %d of %d logits differ from ggml's kernels",
								variants[vi], n, pos, differ, len(a))
						}
						if got, want := w.promptKernelProducts(), 7*info.NLayer+1; got != want {
							t.Errorf("%s kernels, batch of %d: %d products on our kernels, want %d", variants[vi], n, got, want)
						}
					}
					if got := theirs.promptKernelProducts(); got != 0 {
						t.Errorf("batch of %d with GGMLMatMul: %d products on our kernels, want 0", n, got)
					}
					pos += n
				}
			})
		}
	}
}
