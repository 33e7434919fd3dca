package runner

import "testing"

func TestErrorText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ggml: gguf: the file ends early (cut at 100 of 2000 bytes).", "the file ends early (cut at 100 of 2000 bytes)."},
		{"open /m.gguf: no such file or directory", "open /m.gguf: no such file or directory"},
		{"runner: the ring lost every worker", "the ring lost every worker"},
		{"job: the head opened no slice connection", "the head opened no slice connection"}, // engine/ring/job
		{"plain sentence", "plain sentence"},
	} {
		if got := errorText(tc.in); got != tc.want {
			t.Errorf("errorText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
