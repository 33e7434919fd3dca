package head

import (
	"context"
	"testing"

	"homering/engine/llama"
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

// BenchmarkGrammar is the per-token cost of a grammar: 64 greedy tokens
// of stories260K on one thread, free, then under a JSON schema whose
// grammar accepts what the model writes most of the time (a story inside
// a string: one token checked per token) and one it almost never does (an
// array of two words: the vocabulary masked on most tokens). The
// grammar is built in the loop, as each request builds its own.
func BenchmarkGrammar(b *testing.B) {
	h, err := Open(Config{ModelPath: stories260K, NCtx: 256, Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	for _, bc := range []struct{ name, schema string }{
		{"free", ""},
		{"string", `{"type":"string","minLength":400}`},
		{"enum-array", `{"type":"array","items":{"enum":["yes","no"]},"minItems":100}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			masks := 0
			for b.Loop() {
				req := Request{Prompt: "Once upon a time", MaxTokens: 64}
				var c *countingGrammar
				if bc.schema != "" {
					c = &countingGrammar{Grammar: grammar(b, h, bc.schema)}
					req.Constraint = c
				}
				n := 0
				if err := h.Generate(context.Background(), req, func(Token) error { n++; return nil }); err != nil {
					b.Fatal(err)
				}
				if n != 64 {
					b.Fatalf("%d tokens, want 64", n)
				}
				if c != nil {
					masks += c.masks
				}
			}
			b.ReportMetric(float64(b.N*64)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(float64(masks)/float64(b.N*64), "masks/token")
		})
	}
}

// countingGrammar counts a grammar's masks.
type countingGrammar struct {
	*llama.Grammar
	masks int
}

func (c *countingGrammar) Mask(l []float32) { c.masks++; c.Grammar.Mask(l) }
