package runner

import "testing"

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
			if got := passEnd(tt.pos, tt.nPrompt, tt.total, tt.st); got != tt.want {
				t.Errorf("passEnd(%d, %d, %d) = %d, want %d", tt.pos, tt.nPrompt, tt.total, got, tt.want)
			}
		})
	}
}
