package ggml

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"homering/engine/modelgen"
)

// TestMoEPromptKernels: on a qwen3moe window, gemm.c's kernels take only
// the 2-D products (attention's 4 per layer and the output head; the F32
// router is ggml's), never the 3-D expert stacks, which go through
// ggml_mul_mat_id; and the logits are the bits of a window on ggml's kernels
// alone, at 1 and 2 threads.
func TestMoEPromptKernels(t *testing.T) {
	for _, typ := range []string{"Q8_0", "Q4_K", "Q6_K"} {
		path := "../../testdata/models/qwen3moe-" + typ + ".gguf"
		for _, threads := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/threads=%d", typ, threads), func(t *testing.T) {
				m := openT(t, path)
				info := m.Info()
				if info.NExpert != 8 || info.NExpertUsed != 2 || info.NFFExp != 256 {
					t.Fatalf("experts %d, used %d, expert ff %d; want 8, 2, 256", info.NExpert, info.NExpertUsed, info.NFFExp)
				}
				p := WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, AllLogits: true, NCtx: 256, Threads: threads}
				ours := newWindowT(t, m, p)
				p.GGMLMatMul = true
				theirs := newWindowT(t, m, p)
				pos := 0
				for _, n := range []int{33, 1, 7} {
					toks := make([]int32, n)
					for i := range toks {
						toks[i] = int32((pos + i) * 37 % info.NVocab)
					}
					a, err := ours.EvalTokens(toks, pos)
					if err != nil {
						t.Fatal(err)
					}
					b, err := theirs.EvalTokens(toks, pos)
					if err != nil {
						t.Fatal(err)
					}
					for i := range a {
						if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
							t.Fatalf("batch of %d at %d: logit %d is %v, %v on ggml's kernels", n, pos, i, a[i], b[i])
						}
					}
					// Decode steps too (the token kernels).
					if got, want := ours.promptKernelProducts(), 4*info.NLayer+1; got != want {
						t.Errorf("batch of %d: %d products on our kernels, want %d", n, got, want)
					}
					pos += n
				}
			})
		}
	}
}

// TestMoELayerRangesCoverExperts: the byte ranges a window prefetches and
// releases include each layer's expert stacks and router, so the page cache
// treats them as any other layer weight.
func TestMoELayerRangesCoverExperts(t *testing.T) {
	m := openT(t, "../../testdata/models/qwen3moe-Q4_K.gguf")
	for il := range m.Info().NLayer {
		rs := m.LayerRanges(il)
		for _, name := range []string{"ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"} {
			tn, ok := m.file.tensor(fmt.Sprintf("blk.%d.%s.weight", il, name))
			if !ok {
				t.Fatalf("layer %d has no %s", il, name)
			}
			in := false
			for _, r := range rs {
				in = in || r.Off <= tn.offset && tn.offset+tn.size <= r.Off+r.Len
			}
			if !in {
				t.Errorf("layer %d's ranges %v leave out %s [%d, +%d)", il, rs, name, tn.offset, tn.size)
			}
		}
	}
}

// TestMoERefusals: a mixture-of-experts architecture the engine does not
// know gets the one sentence every unknown architecture gets, and a
// qwen3moe that routes more experts per token than the graph builds is
// refused in Go, before any C sees it.
func TestMoERefusals(t *testing.T) {
	good, err := os.ReadFile("../../testdata/models/qwen3moe-Q4_0.gguf")
	if err != nil {
		t.Fatal(err)
	}
	// Every key and the architecture itself: a whole qwen2moe header.
	other := bytes.ReplaceAll(good, []byte("qwen3moe"), []byte("qwen2moe"))
	_, err = Open(writeTemp(t, "qwen2moe.gguf", other))
	var ue *UnsupportedError
	if !errors.As(err, &ue) || ue.Arch != "qwen2moe" || !strings.Contains(err.Error(), "architecture qwen2moe is not supported yet") {
		t.Errorf("Open(qwen2moe) = %v, want architecture qwen2moe is not supported yet", err)
	}

	path := filepath.Join(t.TempDir(), "wide.gguf")
	err = modelgen.Generate(path, modelgen.Config{Arch: "qwen3moe", Layers: 1, Embd: 64, FF: 64, Heads: 2, Vocab: modelgen.MinVocab,
		Experts: 66, ExpertsUsed: 65, ExpertFF: 32, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(path)
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "qwen3moe models with 65 experts used per token (at most 64) are not supported yet") {
		t.Errorf("Open(65 experts used) = %v, want an UnsupportedError", err)
	}
}
