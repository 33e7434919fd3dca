package head

import (
	"slices"
	"testing"

	"homering/engine/chat"
	"homering/engine/llama"
)

// A request's Opening follows the formatted conversation's generation
// prompt (the reasoning families' <think> blocks) and nothing else: a raw
// prompt is used as it is.
func TestPromptTokensOpening(t *testing.T) {
	v, err := llama.LoadVocab(stories260K)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = v.Close() }()
	msgs := []chat.Message{{Role: "user", Content: "Hi"}}
	text, err := v.Formatter().Format(msgs, true)
	if err != nil {
		t.Fatal(err)
	}
	const opening = "<think>\n\n</think>\n\n"
	want, err := v.Tokenize(text+opening, true, true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := PromptTokens(v, Request{Messages: msgs, Opening: opening})
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := PromptTokens(v, Request{Messages: msgs})
	if !slices.Equal(got, want) || len(got) <= len(plain) {
		t.Errorf("with the opening: %d tokens %v, want %d %v (without it %d)", len(got), got, len(want), want, len(plain))
	}
	raw, _ := PromptTokens(v, Request{Prompt: "Hi", Opening: opening})
	rawWant, _ := v.Tokenize("Hi", true, true)
	if !slices.Equal(raw, rawWant) {
		t.Errorf("a raw prompt got the opening: %v, want %v", raw, rawWant)
	}
}
