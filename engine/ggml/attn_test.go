package ggml

import (
	"fmt"
	"path/filepath"
	"testing"

	"homering/engine/modelgen"
)

// TestAttnKernelsMatchGGML: a window on attn.c's kernels for the attention's
// products over the F16 KV cache, each variant this CPU runs, gives the same
// bits as one on ggml's (ggml_vec_dot_f16) in decode steps and in 2- to
// 4-row steps attending row by row (speculation's verifications) at
// positions 37 to 47 and 130 to 140 (cells attended not a multiple of the
// 32-element step of ggml's dot product in the rows; 64 and 160 cells), over
// the families in testdata and generated models whose head sizes (72, 48)
// leave elements past the last step and whose groups share a KV head among
// 2, 3 and 8 query heads; and the kernels really ran: both products of
// every layer for every one-row attention, none for the prompts. Without
// row-by-row attention a step of 2 to 4 rows stays ggml's (tinyBLAS sums in
// its own order) and still matches.
func TestAttnKernelsMatchGGML(t *testing.T) {
	dir := t.TempDir()
	paths := []string{
		"../../testdata/models/llama-Q8_0.gguf",
		"../../testdata/models/mistral-Q4_K.gguf",
		"../../testdata/models/qwen2-Q8_0.gguf",
		"../../testdata/models/qwen3-Q4_K.gguf",
		"../../testdata/models/phi3-Q8_0.gguf",
		"../../testdata/models/gemma2-Q8_0.gguf",
		"../../testdata/models/gemma3-Q4_K.gguf",
		"../../testdata/models/gpt-oss-Q8_0.gguf",
		"../../testdata/models/qwen3moe-Q8_0.gguf",
	}
	for i, c := range []modelgen.Config{
		{Arch: "llama", Layers: 2, Embd: 288, FF: 512, Heads: 4, KVHeads: 2, Vocab: 400, Type: "Q8_0", Seed: 3},
		{Arch: "llama", Layers: 2, Embd: 256, FF: 512, Heads: 8, KVHeads: 1, Vocab: 400, Type: "Q8_0", Seed: 4},
		{Arch: "qwen3", Layers: 2, Embd: 256, FF: 512, Heads: 6, KVHeads: 2, HeadDim: 48, Vocab: 400, Type: "Q8_0", Seed: 5},
	} {
		p := filepath.Join(dir, fmt.Sprintf("attn%d.gguf", i))
		if err := modelgen.Generate(p, c); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	// Steps {n, row by row}: a prompt to position 37, single rows and
	// verifications there, a prompt to 130, the same there.
	steps := [][2]int{{37, 0}, {1, 0}, {2, 1}, {3, 1}, {4, 1}, {1, 0}, {3, 0}, {79, 0}, {1, 0}, {3, 1}, {4, 1}, {2, 1}, {1, 0}, {2, 0}}
	variants := ourKernelsT(t)
	for _, path := range paths {
		threadCounts := []int{1}
		if filepath.Base(path) == "attn1.gguf" || filepath.Base(path) == "llama-Q8_0.gguf" {
			threadCounts = []int{1, 2}
		}
		for _, threads := range threadCounts {
			t.Run(fmt.Sprintf("%s/threads=%d", filepath.Base(path), threads), func(t *testing.T) {
				m := openT(t, path)
				info := m.Info()
				p := WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, AllLogits: true,
					NCtx: 256, Threads: threads}
				ours, theirs := kernelWindowsT(t, m, p, variants)
				pos := 0
				for _, s := range steps {
					n, rows := s[0], s[1] == 1
					toks := make([]int32, n)
					for i := range toks {
						toks[i] = int32(3 + (pos+i)*37%(info.NVocab-3))
					}
					theirs.SetRowAttention(rows)
					b, err := theirs.EvalTokens(toks, pos)
					if err != nil {
						t.Fatal(err)
					}
					if got := theirs.attnKernelProducts(); got != 0 {
						t.Errorf("%d rows at %d with GGMLMatMul: %d attention products on our kernels, want 0", n, pos, got)
					}
					want := 0
					if n == 1 || rows {
						want = 2 * n * info.NLayer
					}
					for vi, w := range ours {
						w.SetRowAttention(rows)
						a, err := w.EvalTokens(toks, pos)
						if err != nil {
							t.Fatal(err)
						}
						if differ := differingBits(a, b); differ > 0 {
							t.Errorf("%s kernels, %d rows at %d (row by row %v): %d of %d logits differ from ggml's",
								variants[vi], n, pos, rows, differ, len(a))
						}
						if got := w.attnKernelProducts(); got != want {
							t.Errorf("%s kernels, %d rows at %d (row by row %v): %d attention products on our kernels, want %d",
								variants[vi], n, pos, rows, got, want)
						}
					}
					pos += n
				}
			})
		}
	}
}
