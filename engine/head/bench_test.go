package head

import (
	"context"
	"testing"
)

// BenchmarkGenerate times the single-device loop: a prompt of ~30 tokens
// (two that differ from their first word on, so each is prefilled) and 64
// greedy tokens of stories260K on one thread, where the loop's own overhead
// weighs most beside the compute.
func BenchmarkGenerate(b *testing.B) {
	h, err := Open(Config{ModelPath: stories260K, NCtx: 256, Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	text := " upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends."
	reqs := []Request{{Prompt: "Once" + text, MaxTokens: 64}, {Prompt: "Twice" + text, MaxTokens: 64}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		req := reqs[i%2]
		i++
		n := 0
		if err := h.Generate(context.Background(), req, func(Token) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		if n != 64 {
			b.Fatalf("%d tokens, want 64", n)
		}
	}
}
