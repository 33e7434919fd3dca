package modelprof

import (
	"strings"
	"testing"

	"homering/engine/gguf"
)

func TestFromGGUF(t *testing.T) {
	tests := []struct {
		name       string
		path       string
		ctx        int
		wantCtx    int
		wantLayers int
		wantType   string
	}{
		{"Q4_K model, configured context", "../../../testdata/models/llama-Q4_K.gguf", 256, 256, 0, "q4_k"},
		{"Q8_0 model, default context", "../../../testdata/models/llama-Q8_0.gguf", 0, 0, 0, "q8_0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := FromGGUF(tt.path, tt.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantCtx > 0 && m.ContextTokens != tt.wantCtx {
				t.Errorf("ContextTokens = %d, want %d", m.ContextTokens, tt.wantCtx)
			}
			if m.ContextTokens <= 0 || m.ContextTokens > DefaultContext {
				t.Errorf("ContextTokens = %d, want 1..%d", m.ContextTokens, DefaultContext)
			}
			if m.Layers < 1 || m.LayerBytes[tt.wantType] <= 0 || m.LayerFlops[tt.wantType] <= 0 || m.LayerFlops["f16"] <= 0 {
				t.Errorf("model = %+v: want layers, %s bytes and FLOPs, attention FLOPs", m, tt.wantType)
			}
			// 2 FLOPs per weight: FLOPs / bytes is 2 × weights per byte.
			if m.OutputBytes <= 0 || m.InputBytes <= 0 || m.KVBytesPerToken <= 0 || m.Vocab <= 0 {
				t.Errorf("model lacks input/output/KV/vocab: %+v", m)
			}
		})
	}
	if _, err := FromGGUF("../../../testdata/models/missing.gguf", 0); err == nil {
		t.Error("FromGGUF(missing) succeeded")
	}
}

// TestMoE: a MoE model's profile splits each layer into always-read and
// expert bytes and charges a token k/n of the experts, with the hot set and
// cold rate from uniform routing or a measured histogram.
func TestMoE(t *testing.T) {
	const path = "../../../testdata/models/qwen3moe-F32.gguf"
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Shape()
	if err != nil {
		t.Fatal(err)
	}
	l, err := f.Layout()
	if err != nil {
		t.Fatal(err)
	}
	n, k := s.NExpert, s.NExpertUsed
	if n != 8 || k != 2 {
		t.Fatalf("qwen3moe-F32 routes %d of %d experts; the test expects 2 of 8", k, n)
	}
	L := int64(len(l.Layers))
	var a, e int64
	for _, p := range l.Layers {
		a += p.Bytes - p.ExpertBytes
		e += p.ExpertBytes
	}
	if e == 0 || a == 0 || e%(L*8) != 0 || a%L != 0 {
		t.Fatalf("layout: always %d, experts %d bytes over %d layers", a, e, L)
	}
	a, e = a/L, e/L

	dense, err := FromGGUF("../../../testdata/models/qwen3-F32.gguf", 256)
	if err != nil {
		t.Fatal(err)
	}
	if dense.LayerReadBytes != 0 || dense.LayerHotBytes != 0 || dense.ColdReadRate != 0 || dense.Routing != "" {
		t.Errorf("dense qwen3 has MoE terms: %+v", dense)
	}

	uni, err := FromShape(s, l, 256)
	if err != nil {
		t.Fatal(err)
	}
	if uni.LayerExpertBytes != e || uni.LayerReadBytes != a+e/4 || uni.LayerHotBytes != a || uni.ColdReadRate != 0.25 {
		t.Errorf("uniform: experts %d read %d hot %d ρ %v, want %d, %d, %d, 0.25",
			uni.LayerExpertBytes, uni.LayerReadBytes, uni.LayerHotBytes, uni.ColdReadRate, e, a+e/4, a)
	}
	// Three stacks (gate, up, down) a layer, 8 experts in each.
	if uni.ExpertSliceBytes != e/24 {
		t.Errorf("expert slice %d bytes, want %d", uni.ExpertSliceBytes, e/24)
	}
	if !strings.Contains(uni.Routing, "uniform top-2 of 8") {
		t.Errorf("routing %q does not say it is uniform", uni.Routing)
	}
	// FLOPs: 2 per always-read weight, 2·k/n per expert weight (all F32).
	wantFlops := 2 * float64(a+e/4) / 4
	if got := uni.LayerFlops["f32"]; got < wantFlops*(1-1e-12) || got > wantFlops*(1+1e-12) {
		t.Errorf("f32 FLOPs %v, want %v", got, wantFlops)
	}

	// Skewed: experts 0 and 1 take 60% of the picks in every layer, the
	// other six share 40% evenly: hot = a + 2e/8, ρ = 2·0.4/6 a token.
	r := &Routing{}
	for range l.Layers {
		r.Counts = append(r.Counts, []int64{360, 360, 80, 80, 80, 80, 80, 80})
	}
	sk, err := FromShapeRouted(s, l, 256, r)
	if err != nil {
		t.Fatal(err)
	}
	if sk.LayerReadBytes != uni.LayerReadBytes || sk.LayerHotBytes != a+e/4 {
		t.Errorf("skewed: read %d hot %d, want %d, %d", sk.LayerReadBytes, sk.LayerHotBytes, uni.LayerReadBytes, a+e/4)
	}
	if want := 2 * 0.4 / 6; sk.ColdReadRate < want*(1-1e-9) || sk.ColdReadRate > want*(1+1e-9) {
		t.Errorf("skewed ρ = %v, want %v", sk.ColdReadRate, want)
	}
	if !strings.Contains(sk.Routing, "measured") || !strings.Contains(sk.Routing, "600 tokens") {
		t.Errorf("routing %q does not say it was measured over 600 tokens", sk.Routing)
	}

	for name, bad := range map[string]*Routing{
		"missing layers": {Counts: r.Counts[:1]},
		"wrong experts":  {Counts: append([][]int64{{1, 2}}, r.Counts[1:]...)},
		"empty layer":    {Counts: append([][]int64{make([]int64, 8)}, r.Counts[1:]...)},
	} {
		if _, err := FromShapeRouted(s, l, 256, bad); err == nil {
			t.Errorf("%s: FromShapeRouted accepted the histogram", name)
		}
	}
}
