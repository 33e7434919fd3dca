package modelprof

import (
	"testing"
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
