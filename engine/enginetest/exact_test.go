package enginetest

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/engine/ggml"
	"homering/engine/head"
	"homering/engine/llama"
)

const (
	stories260K = "../../../shared/models/stories260K.gguf"
	modelDir    = "../../testdata/models"
	promptLen   = 32
	decodeSteps = 16
	relTol      = 1e-4
)

// bitExact lists the models whose logits must be llama.cpp's bits, not just
// within relTol: every other quant type on llama (the engine hands them to
// ggml's kernels unchanged, as llama.cpp does), and llama.cpp's mixes
// (Q4_K_M on a dense, a tied-head and an 8-expert model; gpt-oss's
// MXFP4_MOE).
var bitExact = []string{
	"llama-BF16.gguf", "llama-Q5_K.gguf", "llama-Q3_K.gguf", "llama-Q2_K.gguf", "llama-Q5_0.gguf",
	"llama-IQ4_XS.gguf", "llama-IQ4_NL.gguf", "llama-IQ3_XXS.gguf", "llama-IQ3_S.gguf",
	"llama-IQ2_XXS.gguf", "llama-IQ2_XS.gguf", "llama-IQ1_S.gguf", "llama-MXFP4.gguf",
	"llama-Q4_K_M.gguf", "gemma3-Q4_K_M.gguf", "qwen3moe-Q4_K_M.gguf", "qwen3moe-MXFP4_MOE.gguf",
	"gpt-oss-MXFP4_MOE.gguf",
}

// models lists every model the logits must match on.
func models(t *testing.T) []string {
	t.Helper()
	paths := []string{stories260K}
	for _, arch := range []string{"llama", "mistral", "qwen2", "qwen3", "qwen3moe", "gemma2", "gemma3", "phi3", "gpt-oss"} {
		for _, typ := range []string{"F32", "F16", "Q8_0", "Q4_0", "Q4_K", "Q6_K"} {
			paths = append(paths, filepath.Join(modelDir, arch+"-"+typ+".gguf"))
		}
	}
	for _, name := range bitExact {
		paths = append(paths, filepath.Join(modelDir, name))
	}
	paths = append(paths, filepath.Join(modelDir, "llama-rope-freqs-F32.gguf"), filepath.Join(modelDir, "llama-rope-linear-F32.gguf"),
		filepath.Join(modelDir, "gemma3-softcap-F32.gguf"), filepath.Join(modelDir, "phi3-short-F32.gguf"))
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v: run build/setup.sh (build/gen-models.sh) to generate the test models", err)
		}
	}
	return paths
}

const text = "Once upon a time, in a small village by the sea, there lived an old fisherman " +
	"who counted 1234 waves every morning. He said: \"Ünïcödé, 日本語 and emoji 😀 are fine!\"\n\n" +
	"The end.\tReally, the end."

// prompt returns promptLen tokens of text (repeated if the vocabulary packs
// it into fewer), starting with BOS where the model adds one.
func prompt(t *testing.T, v *llama.Vocab) []int32 {
	t.Helper()
	var toks []int32
	for len(toks) < promptLen {
		more, err := v.Tokenize(text, len(toks) == 0, false)
		if err != nil {
			t.Fatal(err)
		}
		toks = append(toks, more...)
	}
	return toks[:promptLen]
}

type diff struct {
	maxAbs   float64 // max |ours - llama.cpp| over every logit compared
	maxLogit float64 // max |llama.cpp logit|
	exact    bool    // every logit the same bits
}

func (d *diff) add(ours, ref []float32) {
	for i := range ref {
		if math.Float32bits(ours[i]) != math.Float32bits(ref[i]) {
			d.exact = false
		}
		d.maxAbs = max(d.maxAbs, math.Abs(float64(ours[i])-float64(ref[i])))
		d.maxLogit = max(d.maxLogit, math.Abs(float64(ref[i])))
	}
}

func argmax(l []float32) int32 {
	best := 0
	for i, v := range l {
		if v > l[best] {
			best = i
		}
	}
	return int32(best)
}

// TestLogitsMatchLlamaCpp evaluates a 32-token prompt and 16 greedy decode
// steps (driven by llama.cpp's argmax, so both engines see the same tokens)
// in both engines and compares every logit.
func TestLogitsMatchLlamaCpp(t *testing.T) {
	for _, path := range models(t) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			ref, err := llama.NewReference(path, llama.ReferenceParams{NCtx: 64, Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			m, err := ggml.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			info := m.Info()
			w, err := m.NewWindow(ggml.WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, AllLogits: true, NCtx: 64, Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			nv := info.NVocab
			if nv != ref.Vocab().Size() {
				t.Fatalf("vocabulary: ours %d, llama.cpp %d", nv, ref.Vocab().Size())
			}

			d := diff{exact: true}
			toks := prompt(t, ref.Vocab())
			want, err := ref.Logits(toks, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := w.EvalTokens(toks, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(toks)*nv {
				t.Fatalf("prompt: %d logits, want %d", len(got), len(toks)*nv)
			}
			for i := range toks {
				d.add(got[i*nv:(i+1)*nv], want[i])
			}
			next := argmax(want[len(want)-1])
			for step := range decodeSteps {
				pos := promptLen + step
				want, err := ref.Logits([]int32{next}, pos)
				if err != nil {
					t.Fatal(err)
				}
				got, err := w.EvalTokens([]int32{next}, pos)
				if err != nil {
					t.Fatal(err)
				}
				d.add(got, want[0])
				if a, b := argmax(got), argmax(want[0]); a != b {
					t.Errorf("decode step %d: greedy token %d, llama.cpp %d", step, a, b)
				}
				next = argmax(want[0])
			}
			status := "bit-identical"
			if !d.exact {
				status = fmt.Sprintf("%.3g × max|logit|", d.maxAbs/d.maxLogit)
			}
			t.Logf("%s: max |Δ| = %.3g, max |logit| = %.3g (%s) over %d prompt + %d decode tokens",
				name, d.maxAbs, d.maxLogit, status, promptLen, decodeSteps)
			if !d.exact && slices.Contains(bitExact, name) {
				t.Errorf("logits differ from llama.cpp's (max |Δ| %.3g); this model must match bit for bit", d.maxAbs)
			}
			if d.maxAbs > relTol*d.maxLogit {
				t.Errorf("max |Δ| %.3g exceeds %g × max |logit| %.3g", d.maxAbs, relTol, d.maxLogit)
			}
		})
	}
}

// TestGreedyContinuationMatchesLlamaCpp generates 64 tokens after "Once upon
// a time" with engine/head (our engine, greedy) and with llama.cpp (argmax of
// its logits) and requires the same tokens.
func TestGreedyContinuationMatchesLlamaCpp(t *testing.T) {
	const n = 64
	ref, err := llama.NewReference(stories260K, llama.ReferenceParams{NCtx: 256, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	toks, err := ref.Vocab().Tokenize("Once upon a time", true, true)
	if err != nil {
		t.Fatal(err)
	}
	logits, err := ref.LastLogits(toks, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want []int32
	for pos := len(toks); len(want) < n; pos++ {
		tok := argmax(logits)
		want = append(want, tok)
		if ref.Vocab().IsEOG(tok) {
			break
		}
		if logits, err = ref.LastLogits([]int32{tok}, pos); err != nil {
			t.Fatal(err)
		}
	}

	h, err := head.Open(head.Config{ModelPath: stories260K, NCtx: 256, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var got []int32
	var text string
	err = h.Generate(context.Background(), head.Request{Prompt: "Once upon a time", MaxTokens: n}, func(tok head.Token) error {
		got = append(got, tok.ID)
		text += tok.Text
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("greedy continuation (-llama.cpp +ours):\n%s", diff)
	}
	wantText, err := ref.Vocab().Detokenize(want, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if text != wantText {
		t.Errorf("streamed text %q, llama.cpp detokenizes %q", text, wantText)
	}
	t.Logf("greedy continuation (%d tokens, identical to llama.cpp): %q", len(got), text)
}

// TestTokenizerMatchesFullModel: the vocab-only load engine/head uses gives
// the same tokens and pieces as llama.cpp's full model load, for every
// tokenizer the families use.
func TestTokenizerMatchesFullModel(t *testing.T) {
	corpus := []string{
		"Once upon a time",
		" leading space", "trailing space ", "  two  spaces  ", "\ttab\nnewline\r\n", "\n\n\n",
		"numbers 0 7 42 123 4567 89012 3.14159 -1e10 1,000,000",
		"unicode: ü é ß ñ Ω 日本語 한국어 العربية 😀👍🏽",
		"<s></s><|im_start|>user<|im_end|><|endoftext|>",
		"",
	}
	paths := []string{
		stories260K,
		filepath.Join(modelDir, "llama-F32.gguf"), filepath.Join(modelDir, "mistral-Q8_0.gguf"),
		filepath.Join(modelDir, "qwen2-Q8_0.gguf"), filepath.Join(modelDir, "qwen3-Q8_0.gguf"),
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			v, err := llama.LoadVocab(path)
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			ref, err := llama.NewReference(path, llama.ReferenceParams{NCtx: 64, Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			for _, s := range corpus {
				for _, special := range []bool{false, true} {
					a, err := v.Tokenize(s, true, special)
					if err != nil {
						t.Fatal(err)
					}
					b, err := ref.Vocab().Tokenize(s, true, special)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(b, a); diff != "" {
						t.Errorf("Tokenize(%q, parseSpecial=%v) (-full model +vocab only):\n%s", s, special, diff)
					}
					da, _ := v.Detokenize(a, false, special)
					db, _ := ref.Vocab().Detokenize(b, false, special)
					if da != db {
						t.Errorf("Detokenize: vocab only %q, full model %q", da, db)
					}
				}
			}
		})
	}
}
