package ggml

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/engine/gguf"
	"homering/engine/slice"
)

// Weight slices built by engine/slice from real models: a window over the
// parts a slice holds computes the same bits as on the whole file.

var sliceModels = []string{stories, "../../testdata/models/llama-Q8_0.gguf", "../../testdata/models/qwen3-Q4_K.gguf", "../../testdata/models/qwen3moe-Q4_K.gguf",
	"../../testdata/models/phi3-Q8_0.gguf", "../../testdata/models/gpt-oss-MXFP4_MOE.gguf"}

// fileSource serves tensors from a local GGUF, as the head does from its file.
type fileSource struct {
	f *os.File
	g *gguf.File
}

func (s fileSource) ReadTensor(_ context.Context, name string, off int64, p []byte) error {
	t, ok := s.g.Tensor(name)
	if !ok || off+int64(len(p)) > t.Size {
		return fmt.Errorf("no bytes %d+%d of %s", off, len(p), name)
	}
	_, err := s.f.ReadAt(p, t.Offset+off)
	return err
}

// buildSlice writes a slice of path holding layers, input and output into a
// temporary directory and returns its path.
func buildSlice(t *testing.T, path string, layers []slice.Range, input, output bool) string {
	t.Helper()
	g, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	spec := slice.Spec{Source: g, Hashes: map[string][32]byte{}, Layers: layers, Input: input, Output: output}
	spec.Model = sha256.Sum256([]byte(path))
	for _, ti := range g.Tensors {
		b := make([]byte, ti.Size)
		if _, err := f.ReadAt(b, ti.Offset); err != nil {
			t.Fatal(err)
		}
		spec.Hashes[ti.Name] = sha256.Sum256(b)
	}
	res, err := (&slice.Builder{Dir: t.TempDir()}).Build(context.Background(), spec, fileSource{f, g})
	if err != nil {
		t.Fatalf("build slice of %s: %v", path, err)
	}
	return res.Path
}

var sliceTokens = []int32{1, 403, 407, 261, 3}

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: value %d is %v, want %v (bit for bit)", what, i, got[i], want[i])
		}
	}
}

func evalHiddenT(t *testing.T, w *Window, h []float32, pos int) []float32 {
	t.Helper()
	out, err := w.EvalHidden(h, pos)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func evalTokensT(t *testing.T, w *Window, toks []int32, pos int) []float32 {
	t.Helper()
	out, err := w.EvalTokens(toks, pos)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMiddleSliceWindowMatchesWholeFile(t *testing.T) {
	for _, path := range sliceModels {
		t.Run(filepath.Base(path), func(t *testing.T) {
			full := openT(t, path)
			part := openT(t, buildSlice(t, path, []slice.Range{{Start: 1, End: 3}}, false, false))
			fi, pi := full.Info(), part.Info()
			if diff := cmp.Diff(ModelInfo{Slice: true, HeldLayers: []LayerRange{{Start: 1, End: 3}}, NLayer: fi.NLayer, NVocab: fi.NVocab, NEmbd: fi.NEmbd},
				ModelInfo{Slice: pi.Slice, HeldLayers: pi.HeldLayers, HasInput: pi.HasInput, HasOutput: pi.HasOutput, NLayer: pi.NLayer, NVocab: pi.NVocab, NEmbd: pi.NEmbd}); diff != "" {
				t.Errorf("slice Info (-want +got):\n%s", diff)
			}
			if part.Info().FileSize >= full.Info().FileSize {
				t.Errorf("slice is %d bytes, the whole file %d", part.Info().FileSize, full.Info().FileSize)
			}
			// A real hidden state: layer 0's output over a prompt, then one more token.
			head := newWindowT(t, full, WindowParams{First: 0, Last: 1, Embed: true, NCtx: 64, Threads: 1})
			h0 := evalTokensT(t, head, sliceTokens, 0)
			h1 := evalTokensT(t, head, []int32{42}, len(sliceTokens))
			want := newWindowT(t, full, WindowParams{First: 1, Last: 3, NCtx: 64, Threads: 1})
			got := newWindowT(t, part, WindowParams{First: 1, Last: 3, NCtx: 64, Threads: 1})
			sameBits(t, "prompt", evalHiddenT(t, got, h0, 0), evalHiddenT(t, want, h0, 0))
			sameBits(t, "decode step", evalHiddenT(t, got, h1, len(sliceTokens)), evalHiddenT(t, want, h1, len(sliceTokens)))
		})
	}
}

func TestHeadAndTailSlicesChainToTheWholeModel(t *testing.T) {
	for _, path := range sliceModels {
		t.Run(filepath.Base(path), func(t *testing.T) {
			full := openT(t, path)
			n := full.Info().NLayer
			headM := openT(t, buildSlice(t, path, []slice.Range{{Start: 0, End: 2}}, true, false))
			tailM := openT(t, buildSlice(t, path, []slice.Range{{Start: 2, End: n}}, false, true))
			if hi, ti := headM.Info(), tailM.Info(); !hi.HasInput || hi.HasOutput || ti.HasInput || !ti.HasOutput {
				t.Errorf("head holds input %v output %v, tail input %v output %v", hi.HasInput, hi.HasOutput, ti.HasInput, ti.HasOutput)
			}
			whole := newWindowT(t, full, WindowParams{First: 0, Last: n, Embed: true, Output: true, NCtx: 64, Threads: 1})
			head := newWindowT(t, headM, WindowParams{First: 0, Last: 2, Embed: true, NCtx: 64, Threads: 1})
			tail := newWindowT(t, tailM, WindowParams{First: 2, Last: n, Output: true, NCtx: 64, Threads: 1})
			split := func(toks []int32, pos int) []float32 {
				return evalHiddenT(t, tail, evalTokensT(t, head, toks, pos), pos)
			}
			sameBits(t, "prompt logits", split(sliceTokens, 0), evalTokensT(t, whole, sliceTokens, 0))
			pos := len(sliceTokens)
			sameBits(t, "decode logits", split([]int32{42}, pos), evalTokensT(t, whole, []int32{42}, pos))
		})
	}
}

func TestSliceRefusesWindowsItDoesNotHold(t *testing.T) {
	path := "../../testdata/models/llama-Q8_0.gguf"
	models := map[string]*Model{
		"middle": openT(t, buildSlice(t, path, []slice.Range{{Start: 1, End: 3}}, false, false)),
		"head":   openT(t, buildSlice(t, path, []slice.Range{{Start: 0, End: 2}}, true, false)),
		"tail":   openT(t, buildSlice(t, path, []slice.Range{{Start: 2, End: 4}}, false, true)),
		"gapped": openT(t, buildSlice(t, path, []slice.Range{{Start: 0, End: 1}, {Start: 2, End: 3}}, false, false)),
	}
	tests := []struct {
		name, model string
		p           WindowParams
		held        bool
	}{
		{"held middle", "middle", WindowParams{First: 1, Last: 3}, true},
		{"one held layer", "middle", WindowParams{First: 2, Last: 3}, true},
		{"layer below", "middle", WindowParams{First: 0, Last: 2}, false},
		{"layer above", "middle", WindowParams{First: 2, Last: 4}, false},
		{"output head alone", "middle", WindowParams{First: 4, Last: 4, Output: true}, false},
		{"embedding alone", "middle", WindowParams{First: 0, Last: 0, Embed: true}, false},
		{"held head", "head", WindowParams{First: 0, Last: 2, Embed: true}, true},
		{"head past its layers", "head", WindowParams{First: 0, Last: 3, Embed: true}, false},
		{"output head", "head", WindowParams{First: 4, Last: 4, Output: true}, false},
		{"held tail", "tail", WindowParams{First: 2, Last: 4, Output: true}, true},
		{"tail below its layers", "tail", WindowParams{First: 1, Last: 4, Output: true}, false},
		{"tail with embedding", "tail", WindowParams{First: 0, Last: 0, Embed: true}, false},
		{"each held range", "gapped", WindowParams{First: 2, Last: 3}, true},
		{"across the gap", "gapped", WindowParams{First: 0, Last: 3}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.p
			p.NCtx, p.Threads = 16, 1
			w, err := models[tt.model].NewWindow(p)
			if tt.held {
				if err != nil {
					t.Fatalf("NewWindow(%+v) on the %s slice: %v", p, tt.model, err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				_ = w.Close() // the test fails anyway
				t.Fatalf("NewWindow(%+v) on the %s slice succeeded; want a NotHeldError", p, tt.model)
			}
			var nh *NotHeldError
			if !errors.As(err, &nh) || !errors.Is(err, ErrNotHeld) || !errors.Is(err, ErrBadWindow) {
				t.Fatalf("error %v (%T) is not a NotHeldError matching ErrNotHeld and ErrBadWindow", err, err)
			}
			if msg := err.Error(); !strings.Contains(msg, "does not hold") || strings.Count(msg, "\n") > 0 {
				t.Errorf("error is not one sentence about what is not held: %q", msg)
			}
		})
	}
}

// patchSliceLayers rewrites the slice's homering.slice.layers values in a
// copy of path (same length, so the file stays well-formed) and returns it.
func patchSliceLayers(t *testing.T, path string, layers ...int32) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("homering.slice.layers")
	i := bytes.Index(b, key)
	if i < 0 {
		t.Fatal("no homering.slice.layers key in the slice")
	}
	at := i + len(key) + 4 + 4 // value type, element type
	if n := binary.LittleEndian.Uint64(b[at:]); n != uint64(len(layers)) {
		t.Fatalf("the slice has %d layer bounds, the patch %d", n, len(layers))
	}
	for j, v := range layers {
		binary.LittleEndian.PutUint32(b[at+8+4*j:], uint32(v))
	}
	out := filepath.Join(t.TempDir(), "patched.gguf")
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOpenRejectsSliceNotHoldingWhatItClaims(t *testing.T) {
	llama := "../../testdata/models/llama-Q8_0.gguf"
	middle := buildSlice(t, llama, []slice.Range{{Start: 1, End: 3}}, false, false)
	tied := "../../testdata/models/qwen2-tied-Q8_0.gguf"
	tests := []struct {
		name, path string
		kind       error
		says       []string
	}{
		{"claims a layer it lacks", patchSliceLayers(t, middle, 1, 4), ErrBadModel, []string{"blk.3.", "missing", "layers [1, 4)"}},
		{"holds a layer it does not claim", patchSliceLayers(t, middle, 1, 2), ErrBadModel, []string{"blk.2.", "outside", "layers [1, 2)"}},
		{"ranges out of order", patchSliceLayers(t, middle, 3, 1), ErrCorrupt, []string{"homering.slice.layers"}},
		{"ranges past the model", patchSliceLayers(t, middle, 1, 9), ErrCorrupt, []string{"homering.slice.layers", "4 layers"}},
		{"tied output head without the embedding", buildSlice(t, tied, []slice.Range{{Start: 2, End: 4}}, false, true), ErrBadModel, []string{"tied", "token_embd.weight"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Open(tt.path)
			if err == nil {
				_ = m.Close() // the test fails anyway
				t.Fatalf("Open succeeded; want an error")
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("error %v does not match %v", err, tt.kind)
			}
			for _, s := range tt.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

func TestTiedOutputSliceWithEmbeddingMatchesWholeFile(t *testing.T) {
	path := "../../testdata/models/qwen2-tied-Q8_0.gguf"
	full := openT(t, path)
	n := full.Info().NLayer
	tailM := openT(t, buildSlice(t, path, []slice.Range{{Start: 2, End: n}}, true, true))
	head := newWindowT(t, full, WindowParams{First: 0, Last: 2, Embed: true, NCtx: 64, Threads: 1})
	h := evalTokensT(t, head, sliceTokens, 0)
	want := newWindowT(t, full, WindowParams{First: 2, Last: n, Output: true, NCtx: 64, Threads: 1})
	got := newWindowT(t, tailM, WindowParams{First: 2, Last: n, Output: true, NCtx: 64, Threads: 1})
	sameBits(t, "logits", evalHiddenT(t, got, h, 0), evalHiddenT(t, want, h, 0))
}

func TestWholeFileHoldsEverything(t *testing.T) {
	m := openT(t, stories)
	info := m.Info()
	want := []LayerRange{{Start: 0, End: info.NLayer}}
	if info.Slice || !info.HasInput || !info.HasOutput || !cmp.Equal(info.HeldLayers, want) {
		t.Errorf("whole file: Slice %v, HasInput %v, HasOutput %v, HeldLayers %v; want false, true, true, %v", info.Slice, info.HasInput, info.HasOutput, info.HeldLayers, want)
	}
	info.HeldLayers[0].End = 99 // Info returns a copy
	if got := m.Info().HeldLayers; !cmp.Equal(got, want) {
		t.Errorf("HeldLayers changed through a returned Info: %v", got)
	}
}
