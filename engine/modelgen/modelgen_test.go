package modelgen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/engine/gguf"
)

func small(arch, typ string) Config {
	c := Config{Arch: arch, Layers: 2, Embd: 256, FF: 512, Heads: 4, KVHeads: 2, Vocab: 400, Type: typ, Seed: 7}
	if arch == "qwen3" || arch == "qwen3moe" || arch == "gpt-oss" {
		c.Heads, c.HeadDim = 8, 64
	}
	return c
}

func TestGenerateIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	gen := func(name string, c Config) []byte {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := Generate(p, c); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	c := small("qwen2", "Q4_K")
	a, b := gen("a.gguf", c), gen("b.gguf", c)
	if !bytes.Equal(a, b) {
		t.Error("two files from one Config differ")
	}
	c.Seed++
	if d := gen("c.gguf", c); bytes.Equal(a, d) || len(a) != len(d) {
		t.Errorf("a different seed gave identical bytes or a different size (%d vs %d)", len(a), len(d))
	}
}

func TestPooledTensorsAreValidAndVaried(t *testing.T) {
	// A tensor above directElems is assembled from pool blocks: the size must
	// still match and rows must differ (no repeated rows for the output head).
	c := Config{Arch: "llama", Layers: 1, Embd: 256, FF: 1280, Heads: 4, Vocab: 1100, Type: "Q8_0", Seed: 3}
	path := filepath.Join(t.TempDir(), "pooled.gguf")
	if err := Generate(path, c); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := FileSize(c)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != want {
		t.Fatalf("size %d, want %d", len(b), want)
	}
	// token_embd is the last tensor written: its 1100 rows of 256 Q8_0 values
	// (8 blocks of 34 bytes) end the file.
	rowBytes := 8 * 34
	rows := b[len(b)-1100*rowBytes:]
	seen := map[string]int{}
	for r := range 1100 {
		row := string(rows[r*rowBytes : (r+1)*rowBytes])
		if prev, ok := seen[row]; ok {
			t.Fatalf("rows %d and %d of token_embd are identical", prev, r)
		}
		seen[row] = r
	}
}

func TestNormalizeRejects(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"unknown arch", func(c *Config) { c.Arch = "gemma" }, `architecture "gemma"`},
		{"unknown type", func(c *Config) { c.Type = "Q4_1" }, `type "Q4_1"`},
		{"zero layers", func(c *Config) { c.Layers = 0 }, "layers must be positive"},
		{"negative ff", func(c *Config) { c.FF = -1 }, "ff must be positive"},
		{"heads not dividing embd", func(c *Config) { c.Heads = 3 }, "not a multiple of heads"},
		{"kv heads not dividing heads", func(c *Config) { c.KVHeads = 3 }, "not a multiple of kv-heads"},
		{"head dim on llama", func(c *Config) { c.HeadDim = 32 }, "only qwen3, qwen3moe, the gemmas and gpt-oss may differ"},
		{"experts on llama", func(c *Config) { c.Experts = 8 }, "experts are a qwen3moe and gpt-oss feature"},
		{"rope-orig-ctx on llama", func(c *Config) { c.RopeOrigCtx = 128 }, "rope-orig-ctx is a phi3 feature"},
		{"phi3 rope-orig-ctx past ctx", func(c *Config) { c.Arch = "phi3"; c.RopeOrigCtx = 8192 }, "rope-orig-ctx 8192 must be 1 to the context length 4096"},
		{"gpt-oss linear rope", func(c *Config) { c.Arch = "gpt-oss"; c.RopeScaleLinear = 4 }, "gpt-oss ropes with YaRN"},
		{"more used than experts", func(c *Config) { c.Arch = "qwen3moe"; c.Experts, c.ExpertsUsed = 4, 5 }, "experts-used 5 must be 1 to the 4 experts"},
		{"too many experts", func(c *Config) { c.Arch = "qwen3moe"; c.Experts = 513 }, "experts 513 must be 1 to 512"},
		{"k-quant expert row", func(c *Config) { c.Arch = "qwen3moe"; c.Type = "Q4_K"; c.ExpertFF = 320 }, "ffn_down_exps.weight has rows of 320"},
		{"tiny vocab", func(c *Config) { c.Vocab = 100 }, "below the minimum"},
		{"k-quant row", func(c *Config) { c.Type = "Q4_K"; c.FF = 320 }, "multiple of 256"},
		{"q8 row", func(c *Config) { c.Type = "Q8_0"; c.Embd = 200; c.Heads = 4 }, "multiple of 32"},
		{"rope freqs on qwen2", func(c *Config) { c.Arch = "qwen2"; c.RopeFreqs = true }, "rope-freqs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := small("llama", "F32")
			tt.change(&c)
			_, err := c.Normalize()
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrConfig containing %q", err, tt.want)
			}
		})
	}
}

func TestTensorsQwen3HeadDim(t *testing.T) {
	c, err := small("qwen3", "F32").Normalize()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]uint64{}
	for _, s := range c.Tensors() {
		got[s.Name] = s.Shape
	}
	want := map[string][]uint64{
		"blk.1.attn_q.weight":      {256, 512},
		"blk.1.attn_k.weight":      {256, 128},
		"blk.1.attn_v.weight":      {256, 128},
		"blk.1.attn_output.weight": {512, 256},
		"blk.1.attn_q_norm.weight": {64},
		"blk.1.attn_k_norm.weight": {64},
		"token_embd.weight":        {256, 400},
		"output.weight":            {256, 400},
	}
	for name, shape := range want {
		if diff := cmp.Diff(shape, got[name]); diff != "" {
			t.Errorf("%s shape (-want +got):\n%s", name, diff)
		}
	}
	if len(got) != 3+2*11 {
		t.Errorf("%d tensors, want %d", len(got), 3+2*11)
	}
}

func TestBuildVocab(t *testing.T) {
	v, err := BuildVocab(1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Tokens) != 1000 || len(v.Scores) != 1000 || len(v.Types) != 1000 {
		t.Fatalf("lengths %d/%d/%d, want 1000", len(v.Tokens), len(v.Scores), len(v.Types))
	}
	if diff := cmp.Diff([]string{"<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>", "<0x00>"}, v.Tokens[:6]); diff != "" {
		t.Errorf("first tokens (-want +got):\n%s", diff)
	}
	if v.Tokens[5+10] != "<0x0A>" || v.Types[5+10] != tokenByte {
		t.Errorf("token 15 = %q type %d, want the newline byte token", v.Tokens[15], v.Types[15])
	}
	seen := map[string]bool{}
	for i, tok := range v.Tokens {
		if seen[tok] {
			t.Errorf("token %q appears twice", tok)
		}
		seen[tok] = true
		if v.Types[i] == tokenNormal && i > 0 && v.Scores[i] >= v.Scores[i-1] && v.Types[i-1] == tokenNormal {
			t.Errorf("score of %q does not fall with the index", tok)
		}
	}
	// Every prefix of a common word is a piece, so SentencePiece can merge up to it.
	for _, p := range []string{"\u2581o", "\u2581on", "\u2581onc", "\u2581once", "\u2581upon", "\u2581time"} {
		if !seen[p] {
			t.Errorf("piece %q missing", p)
		}
	}
	if _, err := BuildVocab(MinVocab - 1); err == nil {
		t.Error("BuildVocab accepted a vocabulary below MinVocab")
	}
}

func TestRopeFreqFactors(t *testing.T) {
	f := ropeFreqFactors(64)
	if len(f) != 32 || f[0] != 1 || f[31] != llama3Factor {
		t.Fatalf("factors %v: want 32 values from 1 (high frequency) to 8 (low)", f)
	}
	for i := 1; i < len(f); i++ {
		if f[i] < f[i-1] {
			t.Errorf("factor %d = %v < factor %d = %v: must not fall", i, f[i], i-1, f[i-1])
		}
	}
}

// TestGeneratedModelsPassGGUFChecks: every family and type has the size
// FileSize predicts (what gen-model --keep relies on), parses, has the
// hyper-parameters asked for, and has exactly the tensors (names, shapes)
// llama.cpp's loader expects (gguf.CheckTensors; llama.cpp itself loading
// these files is tested by the reference engine's tests).
func TestGeneratedModelsPassGGUFChecks(t *testing.T) {
	dir := t.TempDir()
	for _, arch := range Arches() {
		for _, typ := range Types() {
			if !slices.Contains([]string{"F32", "F16", "Q8_0", "Q4_0", "Q4_K", "Q6_K", "Q4_K_M", "MXFP4_MOE"}, typ) &&
				arch != "llama" && arch != "qwen3moe" {
				continue // the other types on a dense and a MoE family: the i-quants take seconds each
			}
			t.Run(arch+"-"+typ, func(t *testing.T) {
				c := small(arch, typ)
				if arch == "llama" {
					c.RopeFreqs = true
				}
				if arch == "llama" && typ == "F32" {
					c.RopeScaleLinear = 4
				}
				if arch == "qwen2" && typ == "Q8_0" {
					c.TiedOutput = true
				}
				path := filepath.Join(dir, arch+"-"+typ+".gguf")
				if err := Generate(path, c); err != nil {
					t.Fatal(err)
				}
				size, err := FileSize(c)
				if err != nil {
					t.Fatal(err)
				}
				if st, err := os.Stat(path); err != nil || st.Size() != size {
					t.Errorf("FileSize = %d, file: %v %v", size, st, err)
				}
				f, err := gguf.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				s, err := f.Shape()
				if err != nil {
					t.Fatal(err)
				}
				wantArch := arch
				if arch == "mistral" {
					wantArch = "llama"
				}
				got := []int{s.NLayer, s.NEmbd, s.NFF, s.NHead, s.NHeadKV, s.HeadDimK, s.NRot, s.NVocab, s.NCtxTrain}
				want := []int{2, 256, 512, c.Heads, 2, 256 / 4, 256 / 4, 400, 4096}
				if arch == "qwen3" || arch == "qwen3moe" || arch == "gpt-oss" {
					want[5], want[6] = 64, 64
				}
				if arch == "qwen3moe" || arch == "gpt-oss" {
					got = append(got, s.NExpert, s.NExpertUsed, s.NFFExp)
					want = append(want, 8, 2, 256) // the defaults: ff 512 / 2 used
				}
				if s.Arch != wantArch || !cmp.Equal(got, want) {
					t.Errorf("shape %s %v, want %s %v", s.Arch, got, wantArch, want)
				}
				if _, err := f.Check(); err != nil {
					t.Error(err)
				}
				wantScaling, wantScale := "linear", map[bool]float64{true: 0.25, false: 1}[c.RopeScaleLinear == 4]
				if arch == "gpt-oss" {
					wantScaling, wantScale = "yarn", 1.0/32
				}
				if s.RopeFreqScale != wantScale || s.RopeScaling != wantScaling {
					t.Errorf("rope scaling %s x%v, want %s x%v", s.RopeScaling, s.RopeFreqScale, wantScaling, wantScale)
				}
				if arch == "phi3" && (s.RopeOrigCtx != 4096/32 || f.Has("phi3.rope.scaling.attn_factor") != true) {
					t.Errorf("phi3: original context %d, want %d, and an attention factor", s.RopeOrigCtx, 4096/32)
				}
				if arch == "gemma2" || arch == "gemma3" || arch == "gpt-oss" {
					if s.SlidingWindow != 16 { // the default window
						t.Errorf("%s: sliding window %d, want 16", arch, s.SlidingWindow)
					}
				}
				if s.TiedOutput != (c.TiedOutput || arch == "gemma2") { // gemma2's head is always token_embd
					t.Errorf("tied output %v, want %v", s.TiedOutput, c.TiedOutput)
				}
				if s.HasRopeFreqs != (arch == "llama") || s.ChatTemplate != (arch != "llama") {
					t.Errorf("rope freqs %v, chat template %v", s.HasRopeFreqs, s.ChatTemplate)
				}
				for _, ti := range f.Tensors {
					wantType := gguf.TypeF32
					// The router and gpt-oss's expert biases stay F32.
					if len(ti.Shape) >= 2 && !strings.HasSuffix(ti.Name, "ffn_gate_inp.weight") && !strings.HasSuffix(ti.Name, ".bias") {
						if types[typ].layout != nil {
							continue // the mixes: TestMixLayouts
						}
						wantType = types[typ].tt
						if wantType.String() != typ {
							t.Fatalf("type %s writes %s", typ, wantType)
						}
					}
					if ti.Type != wantType {
						t.Errorf("%s is %s, want %s", ti.Name, ti.Type, wantType)
					}
				}
			})
		}
	}
}

func TestTensorsQwen3MoE(t *testing.T) {
	c, err := small("qwen3moe", "Q8_0").Normalize()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]uint64{}
	for _, s := range c.Tensors() {
		got[s.Name] = s.Shape
	}
	want := map[string][]uint64{
		"blk.1.attn_q.weight":        {256, 512},
		"blk.1.attn_q_norm.weight":   {64},
		"blk.1.ffn_gate_inp.weight":  {256, 8},
		"blk.1.ffn_gate_exps.weight": {256, 256, 8},
		"blk.1.ffn_up_exps.weight":   {256, 256, 8},
		"blk.1.ffn_down_exps.weight": {256, 256, 8},
		"blk.1.ffn_norm.weight":      {256},
		"blk.1.ffn_gate.weight":      nil, // no dense FFN
		"blk.1.ffn_down.weight":      nil,
		"blk.1.attn_output.weight":   {512, 256},
		"token_embd.weight":          {256, 400},
	}
	for name, shape := range want {
		if diff := cmp.Diff(shape, got[name]); diff != "" {
			t.Errorf("%s shape (-want +got):\n%s", name, diff)
		}
	}
	if len(got) != 3+2*12 {
		t.Errorf("%d tensors, want %d", len(got), 3+2*12)
	}
}

// TestRouterIsSkewed: routing 4000 unit-RMS inputs (what the router sees
// after ffn_norm) through a generated router picks expert 0 several times
// as often as the last, and the top-k probabilities are far from uniform,
// so a wrong top-k or normalisation would change the logits.
func TestRouterIsSkewed(t *testing.T) {
	c := small("qwen3moe", "Q4_K")
	path := filepath.Join(t.TempDir(), "moe.gguf")
	if err := Generate(path, c); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ti, ok := f.Tensor("blk.0.ffn_gate_inp.weight")
	if !ok || ti.Type != gguf.TypeF32 {
		t.Fatalf("router: %v %v, want an F32 tensor", ti, ok)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const e, n, used = 256, 8, 2
	w := make([]float64, e*n)
	for i := range w {
		w[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[ti.Offset+int64(4*i):])))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var picks [n]int
	var topShare float64 // mean share of the top expert among the used ones
	const tokens = 4000
	for range tokens {
		x := make([]float64, e)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		var logit [n]float64
		for j := range n {
			for i := range e {
				logit[j] += w[j*e+i] * x[i]
			}
		}
		idx := []int{0, 1, 2, 3, 4, 5, 6, 7}
		sort.Slice(idx, func(a, b int) bool { return logit[idx[a]] > logit[idx[b]] })
		p0, p1 := math.Exp(logit[idx[0]]), math.Exp(logit[idx[1]])
		topShare += p0 / (p0 + p1) / tokens
		for _, j := range idx[:used] {
			picks[j]++
		}
	}
	t.Logf("picks per expert over %d tokens (top-%d): %v; top expert's mean normalised weight %.2f", tokens, used, picks, topShare)
	if picks[0] < 3*picks[n-1] {
		t.Errorf("expert 0 picked %d times, expert %d %d: want a skew of 3x or more", picks[0], n-1, picks[n-1])
	}
	for j := 1; j < n; j++ {
		if picks[j] > picks[j-1]+tokens/50 {
			t.Errorf("expert %d picked %d times, more than expert %d (%d): popularity should fall with the index", j, picks[j], j-1, picks[j-1])
		}
	}
	if topShare < 0.75 {
		t.Errorf("top expert's mean normalised weight %.2f: routing too flat to test the weighting", topShare)
	}
}

// TestMixLayouts: the per-tensor types of llama.cpp's mixes, worked out by
// hand from llama-quant.cpp's llama_tensor_get_type (use_more_bits(i, 4)
// holds for layers 2 and 3, (i, 7) for 2, 5 and 6).
func TestMixLayouts(t *testing.T) {
	q4, q5, q6, q8, mx := gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K, gguf.TypeQ8_0, gguf.TypeMXFP4
	layers := func(n int, per func(i int) map[string]gguf.Type) map[string]gguf.Type {
		m := map[string]gguf.Type{}
		for i := range n {
			for k, v := range per(i) {
				m[fmt.Sprintf("blk.%d.%s.weight", i, k)] = v
			}
		}
		return m
	}
	moreBits := map[int][]int{4: {2, 3}, 7: {2, 5, 6}} // layers, by model depth
	more := func(i, n int, yes, no gguf.Type) gguf.Type {
		if slices.Contains(moreBits[n], i) {
			return yes
		}
		return no
	}
	dense := func(n int) func(i int) map[string]gguf.Type {
		return func(i int) map[string]gguf.Type {
			return map[string]gguf.Type{"attn_q": q4, "attn_k": q4, "attn_v": more(i, n, q6, q4), "attn_output": q4,
				"ffn_gate": q4, "ffn_up": q4, "ffn_down": more(i, n, q6, q4)}
		}
	}
	with := func(m map[string]gguf.Type, kv ...any) map[string]gguf.Type {
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1].(gguf.Type)
		}
		return m
	}
	moe := Config{Arch: "qwen3moe", Layers: 4, Embd: 256, FF: 512, Heads: 8, KVHeads: 2, HeadDim: 64, Vocab: 400, Seed: 1}
	gemma := Config{Arch: "gemma3", Layers: 7, Embd: 256, FF: 512, Heads: 4, KVHeads: 2, HeadDim: 128, Vocab: 400, Seed: 1, TiedOutput: true}
	tests := []struct {
		name string
		c    Config
		want map[string]gguf.Type
	}{
		{"llama Q4_K_M", Config{Arch: "llama", Layers: 4, Embd: 256, FF: 512, Heads: 4, KVHeads: 2, Vocab: 400, Seed: 1, Type: "Q4_K_M"},
			with(layers(4, dense(4)), "token_embd.weight", q4, "output.weight", q6)},
		{"gemma3 tied Q4_K_M", func() Config { c := gemma; c.Type = "Q4_K_M"; return c }(),
			with(layers(7, dense(7)), "token_embd.weight", q6)},
		{"qwen3moe Q4_K_M", func() Config { c := moe; c.Type = "Q4_K_M"; return c }(),
			with(layers(4, func(i int) map[string]gguf.Type {
				return map[string]gguf.Type{"attn_q": q4, "attn_k": q8, "attn_v": q8, "attn_output": q5,
					"ffn_gate_exps": q4, "ffn_up_exps": q4, "ffn_down_exps": more(i, 4, q6, q4)}
			}), "token_embd.weight", q4, "output.weight", q6)},
		{"qwen3moe MXFP4_MOE", func() Config { c := moe; c.Type = "MXFP4_MOE"; return c }(),
			with(layers(4, func(int) map[string]gguf.Type {
				return map[string]gguf.Type{"attn_q": q8, "attn_k": q8, "attn_v": q8, "attn_output": q8,
					"ffn_gate_exps": mx, "ffn_up_exps": mx, "ffn_down_exps": mx}
			}), "token_embd.weight", q8, "output.weight", q8)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.gguf")
			if err := Generate(path, tt.c); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]gguf.Type{}
			for _, ti := range f.Tensors {
				if len(ti.Shape) >= 2 && !strings.HasSuffix(ti.Name, "ffn_gate_inp.weight") {
					got[ti.Name] = ti.Type
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("tensor types (-want +got):\n%s", diff)
			}
			if _, err := f.Check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// A target with quiet layers and the same seed's model of its first
// layers (speculative decoding's controlled pair): the small model's
// tensors are the target's, byte for byte, and the quiet layers' output
// projections are scaled down.
func TestQuietLayersAndTheirDraft(t *testing.T) {
	dir := t.TempDir()
	target := small("llama", "F32")
	target.Layers, target.QuietFrom, target.QuietScale = 4, 2, 0.05
	draft := small("llama", "F32")
	tp, dp := filepath.Join(dir, "target.gguf"), filepath.Join(dir, "draft.gguf")
	for p, c := range map[string]Config{tp: target, dp: draft} {
		if err := Generate(p, c); err != nil {
			t.Fatal(err)
		}
	}
	tf, err := gguf.Open(tp)
	if err != nil {
		t.Fatal(err)
	}
	df, err := gguf.Open(dp)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := os.ReadFile(tp)
	db, _ := os.ReadFile(dp)
	bytesOf := func(f *gguf.File, b []byte, name string) []byte {
		ti, ok := f.Tensor(name)
		if !ok {
			t.Fatalf("no tensor %s", name)
		}
		return b[ti.Offset : ti.Offset+ti.Size]
	}
	for _, ti := range df.Tensors {
		if !bytes.Equal(bytesOf(df, db, ti.Name), bytesOf(tf, tb, ti.Name)) {
			t.Errorf("draft tensor %s differs from the target's", ti.Name)
		}
	}
	rms := func(b []byte) float64 {
		var s float64
		for i := 0; i < len(b); i += 4 {
			x := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
			s += x * x
		}
		return math.Sqrt(s / float64(len(b)/4))
	}
	loud, quiet := rms(bytesOf(tf, tb, "blk.1.ffn_down.weight")), rms(bytesOf(tf, tb, "blk.2.ffn_down.weight"))
	if r := quiet / loud; r < 0.04 || r > 0.06 {
		t.Errorf("quiet layer's ffn_down rms %g, loud %g: ratio %g, want 0.05", quiet, loud, r)
	}
	if _, err := (Config{Arch: "llama", Layers: 2, QuietFrom: 2, QuietScale: 1}).Normalize(); !errors.Is(err, ErrConfig) {
		t.Errorf("quiet from the layer count: %v", err)
	}
}
