// Not built for Windows: it uses ring_test.go's harness (signals, /proc).

//go:build !windows

package runner

import (
	"testing"

	"homering/engine/ggml"
)

func TestPassEnd(t *testing.T) {
	fast := Stats{DecodeTokens: 10, DecodeMS: 100}  // 10 ms per token
	slow := Stats{DecodeTokens: 10, DecodeMS: 5000} // 500 ms per token
	for _, tt := range []struct {
		name                string
		pos, nPrompt, total int
		st                  Stats
		want                int
	}{
		{"a short prompt in one pass", 0, 40, 40, Stats{}, 40},
		{"a long prompt in passes of 512", 0, 700, 700, Stats{}, 512},
		{"the long prompt's last pass", 512, 700, 700, Stats{}, 700},
		{"a decode step", 45, 40, 46, fast, 46},
		{"a re-prefill ends its prompt pass at the prompt's end", 0, 40, 60, fast, 40},
		{"a long re-prefill's prompt passes are the first prefill's", 512, 700, 760, fast, 700},
		{"then the generated tokens one by one", 40, 40, 60, fast, 41},
		{"up to 64 of them", 50, 40, 104, fast, 51},
		{"more than 64 go in a batch", 40, 40, 105, fast, 105},
		{"a batch is at most 512", 40, 40, 1000, fast, 552},
		{"one by one only while it takes at most 10 s", 40, 40, 61, slow, 61},
		{"20 tokens at 500 ms take 10 s: still exact", 40, 40, 60, slow, 41},
		{"before any decode step was timed", 40, 40, 50, Stats{}, 41},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := passEnd(tt.pos, tt.nPrompt, tt.total, prefillChunk, tt.st); got != tt.want {
				t.Errorf("passEnd(%d, %d, %d) = %d, want %d", tt.pos, tt.nPrompt, tt.total, got, tt.want)
			}
		})
	}
}

func TestPassRows(t *testing.T) {
	// The bench model's shape (bench/ring.sh full size) and the 0.9 GB test
	// model's: 108 KB per row estimated at a 512 context (90 KB measured).
	big := ggml.ModelInfo{NEmbd: 2048, NFF: 5632, NHead: 16}
	small := ggml.ModelInfo{NEmbd: 256, NFF: 512, NHead: 4}
	for _, tt := range []struct {
		name  string
		info  ggml.ModelInfo
		nCtx  int
		limit int64
		want  int
	}{
		{"plenty of memory: full passes", big, 512, 16 << 30, 512},
		{"a 1.5 GiB cap: 31 MB for compute, 256 rows", big, 512, 1536 << 20, 256},
		{"a 256 MiB cap: 32 rows at least", big, 512, 256 << 20, 32},
		{"a longer context costs more per row", big, 4096, 1536 << 20, 64},
		{"a small model needs little", small, 512, 1 << 30, 512},
		{"a small model under a 256 MiB cap", small, 512, 256 << 20, 256},
		{"memory unknown: full passes", big, 512, 0, 512},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := passRows(tt.info, tt.nCtx, tt.limit); got != tt.want {
				t.Errorf("passRows(%+v, %d, %d) = %d, want %d", tt.info, tt.nCtx, tt.limit, got, tt.want)
			}
		})
	}
}
