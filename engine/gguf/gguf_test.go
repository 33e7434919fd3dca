package gguf

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const stories = "../../../shared/models/stories260K.gguf"

func readBytes(t *testing.T, b []byte) (*File, error) {
	t.Helper()
	return Read(bytes.NewReader(b), int64(len(b)))
}

func TestStories260K(t *testing.T) {
	f, err := Open(stories)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || len(f.KV) != 19 || len(f.Tensors) != 48 || f.Size != 1185376 || f.Alignment != 32 {
		t.Errorf("version %d, %d keys, %d tensors, %d bytes, alignment %d; want 3, 19, 48, 1185376, 32",
			f.Version, len(f.KV), len(f.Tensors), f.Size, f.Alignment)
	}
	s, err := f.Shape()
	if err != nil {
		t.Fatal(err)
	}
	want := ModelShape{
		Arch: "llama", Name: "llama", NLayer: 5, NEmbd: 64, NFF: 172, NHead: 8, NHeadKV: 4,
		HeadDimK: 8, HeadDimV: 8, NRot: 8, NVocab: 512, NCtxTrain: 2048,
		RMSEps: float64(float32(1e-5)), RopeFreqBase: 10000, RopeScaling: "linear", RopeFreqScale: 1,
		RopeOrigCtx: 2048, TokenizerModel: "llama",
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("Shape (-want +got):\n%s", diff)
	}
	if err := f.CheckTensors(s); err != nil {
		t.Errorf("CheckTensors: %v", err)
	}
	if bos, ok := f.Int("tokenizer.ggml.bos_token_id"); !ok || bos != 1 {
		t.Errorf("bos = %d, %v; want 1", bos, ok)
	}
	toks, ok := f.Strings("tokenizer.ggml.tokens")
	if !ok || len(toks) != 512 || toks[1] != "<s>" {
		t.Errorf("tokens: %d, ok %v", len(toks), ok)
	}
	if sc, ok := f.Floats("tokenizer.ggml.scores"); !ok || len(sc) != 512 {
		t.Errorf("scores: %d, ok %v", len(sc), ok)
	}
	if _, ok := f.Float("general.architecture"); ok {
		t.Error("Float accepted a string key")
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok || emb.Type != TypeF32 || !cmp.Equal(emb.Shape, []int64{64, 512}) || emb.Size != 64*512*4 || emb.Offset != f.DataOffset {
		t.Errorf("token_embd.weight = %+v (data offset %d)", emb, f.DataOffset)
	}
	l, err := f.Layout()
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, p := range append([]Part{l.Input, l.Output, l.Other}, l.Layers...) {
		total += p.Bytes
	}
	if len(l.Layers) != 5 || l.Input.Bytes != 131072 || total != l.ByType[TypeF32].Bytes || l.ByType[TypeF32].Count != 48 {
		t.Errorf("layout: %d layers, input %d, total %d, F32 %+v", len(l.Layers), l.Input.Bytes, total, l.ByType[TypeF32])
	}
	for i, p := range l.Layers {
		if len(p.Tensors) != 9 || len(p.Ranges) != 1 {
			t.Errorf("layer %d: %d tensors in %d ranges, want 9 in 1", i, len(p.Tensors), len(p.Ranges))
		}
	}
	if got := s.KVBytesPerToken(2); got != 2*8*4*2 {
		t.Errorf("KVBytesPerToken(2) = %d, want %d", got, 2*8*4*2)
	}
}

// TestTruncatedStories cuts the model at 20 offsets in every part of the file.
func TestTruncatedStories(t *testing.T) {
	full, err := os.ReadFile(stories)
	if err != nil {
		t.Fatal(err)
	}
	f, err := readBytes(t, full)
	if err != nil {
		t.Fatal(err)
	}
	tableStart := f.DataOffset - int64(48*40)
	last := f.Tensors[len(f.Tensors)-1]
	cuts := []struct {
		name string
		at   int64
		kind error
	}{
		{"empty", 0, ErrNotGGUF},
		{"in magic", 3, ErrNotGGUF},
		{"after magic", 4, ErrTruncated},
		{"in version", 6, ErrTruncated},
		{"in tensor count", 10, ErrTruncated},
		{"in kv count", 20, ErrTruncated},
		{"first key length", 27, ErrTruncated},
		{"first key", 40, ErrTruncated},
		{"in token array", 200, ErrTruncated},
		{"later tokens", 3000, ErrTruncated},
		{"in scores", 6000, ErrTruncated},
		{"in token types", 9000, ErrTruncated},
		{"near end of metadata", tableStart - 50, ErrTruncated},
		{"in tensor table", tableStart + 100, ErrTruncated},
		{"end of tensor table", f.DataOffset - 20, ErrTruncated},
		{"at data start", f.DataOffset, ErrTruncated},
		{"first tensor's data", f.DataOffset + 1000, ErrTruncated},
		{"middle of data", f.Size / 2, ErrTruncated},
		{"last tensor's data", last.Offset + 10, ErrTruncated},
		{"one byte short", f.Size - 1, ErrTruncated},
	}
	for _, c := range cuts {
		t.Run(c.name, func(t *testing.T) {
			_, err := readBytes(t, full[:c.at])
			var fe *FormatError
			if !errors.As(err, &fe) || !errors.Is(err, c.kind) {
				t.Fatalf("cut at %d: err = %v, want a *FormatError of kind %v", c.at, err, c.kind)
			}
			msg := err.Error()
			if strings.Count(msg, ". ") > 1 || !strings.HasSuffix(msg, ".") {
				t.Errorf("message is not one sentence plus advice: %q", msg)
			}
			if c.kind == ErrTruncated && (fe.Need <= c.at || !strings.Contains(msg, "Download it again")) {
				t.Errorf("cut at %d: need %d, message %q", c.at, fe.Need, msg)
			}
		})
	}
}

func TestTruncatedMessage(t *testing.T) {
	full, err := os.ReadFile(stories)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cut.gguf")
	if err := os.WriteFile(path, full[:1000000], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(path)
	want := path + " is incomplete: it ends at 1.0 MB but its tensor data needs 1.2 MB. Download it again."
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

func TestOpenNonFiles(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.gguf")
	text := filepath.Join(dir, "notes.txt")
	fifo := filepath.Join(dir, "fifo")
	if err := errors.Join(os.WriteFile(empty, nil, 0o644), os.WriteFile(text, []byte("hello, this is not a model\n"), 0o644)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		kind       error
		msg        string
	}{
		{"missing", filepath.Join(dir, "nope.gguf"), ErrNotFound, filepath.Join(dir, "nope.gguf") + " does not exist. Check the path."},
		{"directory", dir, ErrNotRegular, dir + " is a directory, not a model file. Give the path of a .gguf file."},
		{"empty", empty, ErrNotGGUF, empty + " is not a GGUF model: it is empty (0 bytes). Give the path of a .gguf file."},
		{"text", text, ErrNotGGUF, text + ` is not a GGUF model: it starts with "hell" instead of "GGUF". Give the path of a .gguf file.`},
	}
	if mkfifo(t, fifo) { // Unix only
		tests = append(tests, struct {
			name, path string
			kind       error
			msg        string
		}{"fifo", fifo, ErrNotRegular, fifo + " is a device, pipe or socket, not a model file. Give the path of a .gguf file."})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(tt.path)
			if !errors.Is(err, tt.kind) {
				t.Fatalf("err = %v, want kind %v", err, tt.kind)
			}
			if err.Error() != tt.msg {
				t.Errorf("message\n got %q\nwant %q", err.Error(), tt.msg)
			}
		})
	}
}

func TestTinyModelParses(t *testing.T) {
	f, err := readBytes(t, tinyModel())
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != 2 || f.Tensors[1].Offset != f.DataOffset+32 || f.Tensors[1].Size != 16 {
		t.Errorf("tensors %+v, data offset %d", f.Tensors, f.DataOffset)
	}
	if eps, ok := f.Float("llama.attention.layer_norm_rms_epsilon"); !ok || float32(eps) != 1e-5 {
		t.Errorf("eps %v %v", eps, ok)
	}
}

// TestBadHeaders breaks one field at a time of hand-built files.
func TestBadHeaders(t *testing.T) {
	kvOnly := func(kv func(b *builder)) []byte {
		b := (&builder{}).header(3, 0, 1)
		kv(b)
		return b.Bytes()
	}
	oneTensor := func(name string, typ Type, offset uint64, dataBytes int, shape ...uint64) []byte {
		b := (&builder{}).header(3, 1, 0)
		b.tensor(name, typ, offset, shape...)
		return b.pad().zeros(dataBytes).Bytes()
	}
	tests := []struct {
		name string
		data []byte
		kind error
		msg  string // substring of the message
	}{
		{"version 1", (&builder{}).header(1, 0, 0).Bytes(), ErrBadVersion, "version 1"},
		{"version 4", (&builder{}).header(4, 0, 0).Bytes(), ErrBadVersion, "version 4"},
		{"version 0", (&builder{}).header(0, 0, 0).Bytes(), ErrBadVersion, "version 0"},
		{"big endian", (&builder{}).header(3<<24, 0, 0).Bytes(), ErrBadVersion, "big-endian"},
		{"kv count too high", (&builder{}).header(3, 0, 2).kvU32("a", 1).Bytes(), ErrTruncated, "its metadata"},
		{"kv count absurd", (&builder{}).header(3, 0, 1<<60).Bytes(), ErrBadMetadata, "metadata count"},
		{"tensor count absurd", (&builder{}).header(3, 1<<62, 0).Bytes(), ErrBadTensor, "tensor count"},
		{"tensor count too high", (&builder{}).header(3, 3, 0).tensor("a", TypeF32, 0, 8).Bytes(), ErrTruncated, "tensor table"},
		{"unknown value type", kvOnly(func(b *builder) { b.str("k").u32(13).u32(0) }), ErrBadMetadata, "unknown value type 13"},
		{"array of arrays", kvOnly(func(b *builder) { b.str("k").u32(uint32(Array)).u32(uint32(Array)).u64(1) }), ErrBadMetadata, "array of arrays"},
		{"array of unknown", kvOnly(func(b *builder) { b.str("k").u32(uint32(Array)).u32(77).u64(1) }), ErrBadMetadata, "unknown type 77"},
		{"huge array", kvOnly(func(b *builder) { b.str("k").u32(uint32(Array)).u32(uint32(Uint64)).u64(1 << 61) }), ErrBadMetadata, `key "k" claims 2305843009213693952 entries`},
		{"huge string array", kvOnly(func(b *builder) { b.str("k").u32(uint32(Array)).u32(uint32(String)).u64(1 << 40) }), ErrBadMetadata, "claims"},
		{"array overflowing int64", kvOnly(func(b *builder) { b.str("k").u32(uint32(Array)).u32(uint32(Uint64)).u64(1<<63 + 5) }), ErrBadMetadata, "no model has more than"},
		{"array cut", kvOnly(func(b *builder) { b.str("k").u32(uint32(Array)).u32(uint32(Uint32)).u64(100).u32(1) }), ErrTruncated, "metadata"},
		{"huge key", (&builder{}).header(3, 0, 1).u64(1 << 50).zeros(20).Bytes(), ErrBadMetadata, "key 0's name"},
		{"huge string value", kvOnly(func(b *builder) { b.str("k").u32(uint32(String)).u64(1 << 45) }), ErrBadMetadata, `key "k"`},
		{"duplicate key", (&builder{}).header(3, 0, 2).kvU32("a", 1).kvU32("a", 2).Bytes(), ErrBadMetadata, `key "a" appears twice`},
		{"alignment not u32", kvOnly(func(b *builder) { b.kvF32("general.alignment", 32) }), ErrBadMetadata, "general.alignment is a float32"},
		{"alignment not power of 2", kvOnly(func(b *builder) { b.kvU32("general.alignment", 24) }), ErrBadMetadata, "not a power of two"},
		{"alignment zero", kvOnly(func(b *builder) { b.kvU32("general.alignment", 0) }), ErrBadMetadata, "not a power of two"},
		{"five dims", oneTensor("t", TypeF32, 0, 4, 1, 1, 1, 1, 1), ErrBadTensor, "5 dimensions"},
		{"negative dim", oneTensor("t", TypeF32, 0, 4, 1<<63+1), ErrBadTensor, "negative dimension"},
		{"element overflow", oneTensor("t", TypeF32, 0, 4, 1<<40, 1<<40), ErrBadTensor, "64-bit"},
		{"size overflow", oneTensor("t", Type(28), 0, 4, 1<<61, 2), ErrBadTensor, "64-bit"},
		{"removed type", oneTensor("t", 4, 0, 32, 32), ErrBadTensor, "unknown type number 4"},
		{"type beyond count", oneTensor("t", 99, 0, 32, 32), ErrBadTensor, "unknown type number 99"},
		{"row not multiple of block", oneTensor("t", TypeQ4_K, 0, 1000, 100, 4), ErrBadTensor, "not a multiple of Q4_K's block of 256"},
		{"misaligned offset", oneTensor("t", TypeF32, 8, 64, 4), ErrBadTensor, "not a multiple of the alignment 32"},
		{"offset gap", oneTensor("t", TypeF32, 64, 128, 4), ErrBadTensor, "where 0 was expected"},
		{"data beyond end", oneTensor("t", TypeF32, 0, 10, 4, 4), ErrTruncated, "its tensor data needs"},
		{"offset far beyond", (&builder{}).header(3, 2, 0).tensor("a", TypeF32, 0, 4).tensor("b", TypeF32, 1<<40, 4).pad().zeros(64).Bytes(), ErrBadTensor, "where 32 was expected"},
		{"duplicate tensor", (&builder{}).header(3, 2, 0).tensor("a", TypeF32, 0, 4).tensor("a", TypeF32, 32, 4).pad().zeros(64).Bytes(), ErrBadTensor, `tensor "a" appears twice`},
		{"long tensor name", oneTensor(strings.Repeat("x", 64), TypeF32, 0, 16, 4), ErrBadTensor, "64 bytes long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readBytes(t, tt.data)
			var fe *FormatError
			if !errors.As(err, &fe) || !errors.Is(err, tt.kind) {
				t.Fatalf("err = %v, want a *FormatError of kind %v", err, tt.kind)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("message %q does not contain %q", err.Error(), tt.msg)
			}
		})
	}
}

func TestShapeErrors(t *testing.T) {
	build := func(kvs func(b *builder), n uint64) []byte {
		b := (&builder{}).header(3, 0, n)
		kvs(b)
		return b.Bytes()
	}
	tests := []struct {
		name string
		data []byte
		kind error
		msg  string
	}{
		{"no arch", build(func(b *builder) {}, 0), ErrBadMetadata, "general.architecture is missing"},
		{"no layers", build(func(b *builder) { b.kvStr("general.architecture", "llama") }, 1), ErrBadMetadata, "llama.block_count is missing"},
		{"layers as string", build(func(b *builder) {
			b.kvStr("general.architecture", "llama").kvStr("llama.block_count", "many")
		}, 2), ErrBadMetadata, "llama.block_count is a string, not an integer"},
		{"zero heads", build(func(b *builder) {
			b.kvStr("general.architecture", "llama").kvU32("llama.block_count", 2).kvU32("llama.embedding_length", 64).kvU32("llama.attention.head_count", 0)
		}, 4), ErrBadMetadata, "head_count is 0"},
		{"kv heads not dividing", build(func(b *builder) {
			b.kvStr("general.architecture", "llama").kvU32("llama.block_count", 2).kvU32("llama.embedding_length", 64).kvU32("llama.attention.head_count", 8).kvU32("llama.attention.head_count_kv", 3)
		}, 5), ErrBadMetadata, "8 attention heads cannot be shared by 3"},
		{"per-layer heads", build(func(b *builder) {
			b.kvStr("general.architecture", "llama").kvU32("llama.block_count", 2).kvU32("llama.embedding_length", 64)
			b.str("llama.attention.head_count").u32(uint32(Array)).u32(uint32(Uint32)).u64(2).u32(8).u32(4)
		}, 4), ErrUnsupported, "different llama.attention.head_count per layer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := readBytes(t, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.Shape()
			if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %v, want kind %v containing %q", err, tt.kind, tt.msg)
			}
		})
	}
}

func TestCheckTensorsRejects(t *testing.T) {
	f, err := Open(stories)
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Shape()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		change func(s *ModelShape)
		kind   error
		msg    string
	}{
		{"other arch", func(s *ModelShape) { s.Arch = "phi2" }, ErrUnsupported, "uses architecture phi2, which is not supported yet"},
		{"wrong ff", func(s *ModelShape) { s.NFF = 128 }, ErrBadTensor, "blk.0.ffn_gate.weight has shape [64 172] where a llama model with these hyper-parameters has [64 128]"},
		{"more layers", func(s *ModelShape) { s.NLayer = 6 }, ErrBadTensor, "tensor blk.5.attn_norm.weight is missing"},
		{"fewer layers", func(s *ModelShape) { s.NLayer = 4 }, ErrUnsupported, "has tensor blk.4."},
		{"rot mismatch", func(s *ModelShape) { s.NRot = 4 }, ErrBadMetadata, "rope.dimension_count is 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := s
			tt.change(&bad)
			err := f.CheckTensors(bad)
			if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %v, want kind %v containing %q", err, tt.kind, tt.msg)
			}
		})
	}
}

func TestHumanBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{{0, "0 bytes"}, {9999, "9999 bytes"}, {10000, "10 KB"}, {812_000_000, "812 MB"}, {3_900_000_000, "3.9 GB"}, {1_185_376, "1.2 MB"}, {12_000_000_000_000, "12 TB"}}
	for _, tt := range tests {
		if got := humanBytes(tt.n); got != tt.want {
			t.Errorf("humanBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestVersion2(t *testing.T) {
	b := (&builder{}).header(2, 1, 1).kvStr("general.architecture", "llama").tensor("a", TypeQ8_0, 0, 64)
	data := b.pad().zeros(68).Bytes()
	f, err := readBytes(t, data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 2 || f.Tensors[0].Size != 68 || f.Tensors[0].Offset != f.DataOffset {
		t.Errorf("version %d, tensor %+v, data offset %d", f.Version, f.Tensors[0], f.DataOffset)
	}
}

// BenchmarkOpenStories260K measures a full header parse and check of a real
// file with a 512-token vocabulary.
func BenchmarkOpenStories260K(b *testing.B) {
	for b.Loop() {
		if _, err := Open(stories); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCheckVocab(t *testing.T) {
	strArr := func(b *builder, key string, xs ...string) {
		b.str(key).u32(uint32(Array)).u32(uint32(String)).u64(uint64(len(xs)))
		for _, x := range xs {
			b.str(x)
		}
	}
	f32Arr := func(b *builder, key string, n int) {
		b.str(key).u32(uint32(Array)).u32(uint32(Float32)).u64(uint64(n)).zeros(4 * n)
	}
	build := func(n uint64, kvs func(b *builder)) []byte {
		b := (&builder{}).header(3, 0, n)
		kvs(b)
		return b.Bytes()
	}
	tests := []struct {
		name string
		data []byte
		msg  string // "" for a valid vocabulary
	}{
		{"valid", build(3, func(b *builder) {
			strArr(b, "tokenizer.ggml.tokens", "a", "b", "")
			f32Arr(b, "tokenizer.ggml.scores", 3)
			b.str("tokenizer.ggml.token_type").u32(uint32(Array)).u32(uint32(Int32)).u64(3).zeros(12)
		}), ""},
		{"no tokens", build(0, func(b *builder) {}), "has no tokenizer.ggml.tokens"},
		{"tokens not strings", build(1, func(b *builder) { f32Arr(b, "tokenizer.ggml.tokens", 2) }), "tokenizer.ggml.tokens is an array of float32, not an array of strings"},
		{"duplicate token", build(1, func(b *builder) { strArr(b, "tokenizer.ggml.tokens", "a", "b", "a") }), `token 0 and token 2 are both "a"`},
		{"empty collides", build(1, func(b *builder) { strArr(b, "tokenizer.ggml.tokens", "[EMPTY_1]", "") }), `both "[EMPTY_1]"`},
		{"short scores", build(2, func(b *builder) {
			strArr(b, "tokenizer.ggml.tokens", "a", "b", "c")
			f32Arr(b, "tokenizer.ggml.scores", 2)
		}), "tokenizer.ggml.scores has 2 entries for 3 tokens"},
		{"scores as strings", build(2, func(b *builder) {
			strArr(b, "tokenizer.ggml.tokens", "a")
			strArr(b, "tokenizer.ggml.scores", "1")
		}), "scores is an array of string, not an array of float32"},
		{"scalar token types", build(2, func(b *builder) {
			strArr(b, "tokenizer.ggml.tokens", "a")
			b.kvU32("tokenizer.ggml.token_type", 1)
		}), "token_type is a uint32, not an array of int32"},
		{"merges not strings", build(2, func(b *builder) {
			strArr(b, "tokenizer.ggml.tokens", "a")
			b.kvU32("tokenizer.ggml.merges", 1)
		}), "merges is a uint32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := readBytes(t, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			err = f.CheckVocab()
			if tt.msg == "" {
				if err != nil {
					t.Errorf("valid vocabulary rejected: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrBadMetadata) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %v, want ErrBadMetadata containing %q", err, tt.msg)
			}
		})
	}
	g, err := Open(stories)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Check(); err != nil {
		t.Errorf("stories260K: %v", err)
	}
}

func TestWindowRanges(t *testing.T) {
	f, err := Open(stories)
	if err != nil {
		t.Fatal(err)
	}
	l, err := f.Layout()
	if err != nil {
		t.Fatal(err)
	}
	sum := func(rs []Range) (n int64) {
		for i, r := range rs {
			if r.End <= r.Start || (i > 0 && r.Start <= rs[i-1].End) {
				t.Errorf("ranges not sorted and disjoint: %v", rs)
			}
			n += r.End - r.Start
		}
		return n
	}
	// Layers are stored in order, so [1,3) is one run of two layers' bytes.
	if rs := l.WindowRanges(1, 3, false, false); len(rs) != 1 || sum(rs) != l.Layers[1].Bytes+l.Layers[2].Bytes {
		t.Errorf("[1,3): %v, want one range of %d bytes", rs, l.Layers[1].Bytes+l.Layers[2].Bytes)
	}
	all := l.WindowRanges(0, 5, true, true)
	last := f.Tensors[len(f.Tensors)-1]
	if len(all) != 1 || all[0].Start != f.DataOffset || all[0].End != last.Offset+last.Size {
		t.Errorf("whole model: %v, want [%d,%d)", all, f.DataOffset, last.Offset+last.Size)
	}
	if rs := l.WindowRanges(3, 99, false, true); sum(rs) != l.Layers[3].Bytes+l.Layers[4].Bytes+l.Output.Bytes {
		t.Errorf("[3,5)+output: %v", rs)
	}
}

// bigFile is a huge file of zeros after a given prefix, without the memory:
// it lets tests put absurd but in-bounds counts into a "40 GB" file.
type bigFile struct{ prefix []byte }

func (b bigFile) ReadAt(p []byte, off int64) (int, error) {
	for i := range p {
		p[i] = 0
		if j := off + int64(i); j < int64(len(b.prefix)) {
			p[i] = b.prefix[j]
		}
	}
	return len(p), nil
}

// TestCountsInBigFileAreCapped: counts that fit in a 40 GB file but no real
// model has are rejected before allocating.
func TestCountsInBigFileAreCapped(t *testing.T) {
	const size = 40 << 30
	kv := func(f func(b *builder)) []byte {
		b := (&builder{}).header(3, 0, 1)
		f(b)
		return b.Bytes()
	}
	tests := []struct {
		name string
		data []byte
		kind error
		msg  string
	}{
		{"string array", kv(func(b *builder) { b.str("k").u32(uint32(Array)).u32(uint32(String)).u64(1 << 31) }), ErrBadMetadata, `key "k" claims 2147483648 entries; no model has more than 16777216`},
		{"byte array", kv(func(b *builder) { b.str("k").u32(uint32(Array)).u32(uint32(Uint8)).u64(1 << 34) }), ErrBadMetadata, "no model has more than 16777216"},
		{"long string", kv(func(b *builder) { b.str("k").u32(uint32(String)).u64(1 << 33) }), ErrBadMetadata, "is 8589934592 bytes long; the limit is 67108864"},
		{"many keys", (&builder{}).header(3, 0, 1<<30).Bytes(), ErrBadMetadata, "the metadata count claims 1073741824"},
		{"many tensors", (&builder{}).header(3, 1<<30, 0).Bytes(), ErrBadTensor, "the tensor count claims 1073741824"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(bigFile{tt.data}, size)
			if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %v, want kind %v containing %q", err, tt.kind, tt.msg)
			}
		})
	}
}

// failingReader fails every read after the first n bytes with an I/O error.
type failingReader struct {
	data []byte
	n    int64
}

func (r failingReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > r.n {
		k := max(0, int(r.n-off))
		copy(p, r.data[off:off+int64(k)])
		return k, syscall.EIO
	}
	return copy(p, r.data[off:]), nil
}

func TestIOErrors(t *testing.T) {
	full, err := os.ReadFile(stories)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Read(failingReader{full, 5000}, int64(len(full)))
	if !errors.Is(err, ErrIO) || !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "cannot be read (at byte") {
		t.Errorf("EIO: %v", err)
	}
	if _, err := Read(bytes.NewReader(nil), -1); !errors.Is(err, ErrIO) {
		t.Errorf("negative size: %v", err)
	}
}

// TestEveryKindHasAdvice: each error kind reads as what is wrong plus what
// to do.
func TestEveryKindHasAdvice(t *testing.T) {
	kinds := []error{ErrNotFound, ErrNotRegular, ErrNotGGUF, ErrTruncated, ErrBadVersion, ErrBadMetadata, ErrBadTensor, ErrUnsupported, ErrIO}
	for _, k := range kinds {
		t.Run(k.Error(), func(t *testing.T) {
			msg := (&FormatError{Path: "m.gguf", Kind: k, Offset: 10, Detail: "is odd", Size: 5, Need: 10}).Error()
			if !strings.HasPrefix(msg, "m.gguf ") || !strings.HasSuffix(msg, ".") {
				t.Errorf("%q does not name the file or end a sentence", msg)
			}
			i := strings.LastIndex(strings.TrimSuffix(msg, "."), ". ")
			if i < 0 {
				t.Fatalf("%q has no advice sentence", msg)
			}
			if adv := msg[i+2:]; len(adv) < 10 {
				t.Errorf("advice %q is too short to help", adv)
			}
			if !errors.Is(&FormatError{Kind: k}, k) {
				t.Errorf("errors.Is fails for %v", k)
			}
		})
	}
}

// qwen3moe is a generated mixture-of-experts model (build/gen-models.sh).
const qwen3moe = "../../testdata/models/qwen3moe-Q8_0.gguf"

// TestQwen3MoE: a qwen3moe model passes the checks with its experts read as
// llama.cpp reads them, its layers' expert bytes are the stacked expert
// tensors, and a window's ranges cover them like any other layer tensor.
func TestQwen3MoE(t *testing.T) {
	f, err := Open(qwen3moe)
	if err != nil {
		t.Fatalf("%v (build/gen-models.sh generates it)", err)
	}
	s, err := f.Check()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := []int{s.NExpert, s.NExpertUsed, s.NFFExp, s.NFF}, []int{8, 2, 256, 512}; !slices.Equal(got, want) {
		t.Errorf("experts, used, expert ff, ff = %v, want %v", got, want)
	}
	l, err := f.Layout()
	if err != nil {
		t.Fatal(err)
	}
	for il, p := range l.Layers {
		var want int64
		for _, name := range []string{"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"} {
			ti, ok := f.Tensor(fmt.Sprintf("blk.%d.%s.weight", il, name))
			if !ok || len(ti.Shape) != 3 || ti.Shape[2] != 8 {
				t.Fatalf("layer %d %s: %+v, want a 3-D tensor of 8 experts", il, name, ti)
			}
			want += ti.Size
			in := false
			for _, r := range l.WindowRanges(il, il+1, false, false) {
				in = in || r.Start <= ti.Offset && ti.Offset+ti.Size <= r.End
			}
			if !in {
				t.Errorf("layer %d's window ranges leave out %s", il, name)
			}
		}
		if p.ExpertBytes != want || p.ExpertBytes >= p.Bytes {
			t.Errorf("layer %d: expert bytes %d of %d, want %d", il, p.ExpertBytes, p.Bytes, want)
		}
	}

	tests := []struct {
		name   string
		change func(s *ModelShape)
		kind   error
		msg    string
	}{
		{"more experts", func(s *ModelShape) { s.NExpert = 16 }, ErrBadTensor, "blk.0.ffn_gate_inp.weight has shape [256 8] where a qwen3moe model with these hyper-parameters has [256 16]"},
		{"wider experts", func(s *ModelShape) { s.NFFExp = 512 }, ErrBadTensor, "blk.0.ffn_gate_exps.weight has shape [256 256 8] where a qwen3moe model with these hyper-parameters has [256 512 8]"},
		{"more used than experts", func(s *ModelShape) { s.NExpertUsed = 9 }, ErrBadMetadata, "expert_used_count is 9; it must be 1 to the 8 experts"},
		{"no experts", func(s *ModelShape) { s.NExpert = 0 }, ErrBadMetadata, "qwen3moe.expert_count is 0"},
		{"experts on a dense arch", func(s *ModelShape) { s.Arch = "qwen3" }, ErrUnsupported, "is a mixture-of-experts model (8 experts)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := s
			tt.change(&bad)
			err := f.CheckTensors(bad)
			if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %v, want kind %v containing %q", err, tt.kind, tt.msg)
			}
		})
	}
}

// TestGemma: the generated gemma files pass the checks, with the sliding
// window and its layer pattern read as llama.cpp reads them, and the
// families' tensors told apart (gemma3's q/k norms are no gemma2 tensors).
func TestGemma(t *testing.T) {
	for _, tt := range []struct {
		path            string
		window, pattern int
	}{
		{"../../testdata/models/gemma3-Q8_0.gguf", 16, 6},
		{"../../testdata/models/gemma2-Q8_0.gguf", 16, 2},
	} {
		f, err := Open(tt.path)
		if err != nil {
			t.Fatalf("%v (build/gen-models.sh generates it)", err)
		}
		s, err := f.Check()
		if err != nil {
			t.Fatal(err)
		}
		if s.SlidingWindow != tt.window || s.SWAPattern != tt.pattern {
			t.Errorf("%s: sliding window %d, pattern %d; want %d, %d", tt.path, s.SlidingWindow, s.SWAPattern, tt.window, tt.pattern)
		}
		if s.Arch == "gemma3" {
			bad := s
			bad.Arch = "gemma2"
			err := f.CheckTensors(bad)
			if want := "has tensor blk.0.attn_k_norm.weight, which a gemma2 model does not have"; !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), want) {
				t.Errorf("gemma3 tensors checked as gemma2: %v, want %q", err, want)
			}
		}
	}
}

// TestPhi3AndGPTOSS: the generated phi3 and gpt-oss files pass the checks
// (phi3's fused attn_qkv and ffn_up, its LongRoPE factors; gpt-oss's
// biases, sinks, expert biases and window read as llama.cpp reads them),
// gpt-oss's expert biases count as expert bytes, and a wrong shape of the
// tensors only these families have is named.
func TestPhi3AndGPTOSS(t *testing.T) {
	phi, err := Open("../../testdata/models/phi3-Q8_0.gguf")
	if err != nil {
		t.Fatalf("%v (build/gen-models.sh generates it)", err)
	}
	ps, err := phi.Check()
	if err != nil {
		t.Fatal(err)
	}
	if ps.RopeOrigCtx != 128 || ps.SlidingWindow != 0 || ps.NExpert != 0 {
		t.Errorf("phi3: original context %d, window %d, experts %d; want 128, 0, 0", ps.RopeOrigCtx, ps.SlidingWindow, ps.NExpert)
	}
	oss, err := Open("../../testdata/models/gpt-oss-MXFP4_MOE.gguf")
	if err != nil {
		t.Fatalf("%v (build/gen-models.sh generates it)", err)
	}
	gs, err := oss.Check()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := []int{gs.NExpert, gs.NExpertUsed, gs.NFFExp, gs.SlidingWindow, gs.SWAPattern}, []int{8, 4, 256, 16, 2}; !slices.Equal(got, want) {
		t.Errorf("gpt-oss experts, used, expert ff, window, pattern = %v, want %v", got, want)
	}
	l, err := oss.Layout()
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, name := range []string{"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"} {
		for _, kind := range []string{"weight", "bias"} {
			ti, ok := oss.Tensor(fmt.Sprintf("blk.0.%s.%s", name, kind))
			if !ok {
				t.Fatalf("blk.0.%s.%s is missing", name, kind)
			}
			want += ti.Size
		}
	}
	if l.Layers[0].ExpertBytes != want {
		t.Errorf("gpt-oss layer 0: expert bytes %d, want %d", l.Layers[0].ExpertBytes, want)
	}
	for _, tt := range []struct {
		name   string
		f      *File
		s      ModelShape
		change func(s *ModelShape)
		msg    string
	}{
		{"phi3 more KV heads", phi, ps, func(s *ModelShape) { s.NHeadKV = 4 }, "blk.0.attn_qkv.weight has shape [256 512] where a phi3 model with these hyper-parameters has [256 768]"},
		{"phi3 wider ffn", phi, ps, func(s *ModelShape) { s.NFF = 1024 }, "blk.0.ffn_down.weight has shape [512 256] where a phi3 model with these hyper-parameters has [1024 256]"},
		{"phi3 as llama", phi, ps, func(s *ModelShape) { s.Arch = "llama" }, "blk.0.attn_q.weight is missing"},
		{"gpt-oss more heads", oss, gs, func(s *ModelShape) { s.NHead = 16 }, "blk.0.attn_q.weight has shape [256 512] where a gpt-oss model with these hyper-parameters has [256 1024]"},
		{"gpt-oss wider experts", oss, gs, func(s *ModelShape) { s.NFFExp = 512 }, "blk.0.ffn_gate_exps.weight has shape [256 256 8] where a gpt-oss model with these hyper-parameters has [256 512 8]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bad := tt.s
			tt.change(&bad)
			err := tt.f.CheckTensors(bad)
			if !errors.Is(err, ErrBadTensor) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %v, want %v containing %q", err, ErrBadTensor, tt.msg)
			}
		})
	}
}
