package head

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/engine/chat"
	"homering/engine/ggml"
	"homering/engine/sample"
)

const stories260K = "../../../shared/models/stories260K.gguf"

func open(t *testing.T) *Head {
	t.Helper()
	h, err := Open(Config{ModelPath: stories260K, NCtx: 256, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	return h
}

type run struct {
	IDs   []int32
	Text  string
	EOG   bool
	Stats Stats
}

func generate(t *testing.T, h *Head, req Request) run {
	t.Helper()
	var r run
	err := h.Generate(context.Background(), req, func(tok Token) error {
		r.IDs = append(r.IDs, tok.ID)
		r.Text += tok.Text
		r.EOG = r.EOG || tok.EOG
		r.Stats = tok.Stats
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGreedyIsDeterministicAndReusesTheCache(t *testing.T) {
	h := open(t)
	req := Request{Prompt: "Once upon a time", MaxTokens: 24}
	first := generate(t, h, req)
	if len(first.IDs) != 24 || first.EOG {
		t.Fatalf("got %d tokens (EOG %v), want 24", len(first.IDs), first.EOG)
	}
	if !strings.Contains(first.Text, " ") || strings.TrimSpace(first.Text) == "" {
		t.Errorf("generated text %q is not words", first.Text)
	}
	if first.Stats.PromptTokens != 5 || first.Stats.CachedTokens != 0 || first.Stats.DecodeTokens != 23 {
		t.Errorf("stats %+v: want 5 prompt tokens, none cached, 23 decoded", first.Stats)
	}
	// The same prompt again: everything but the last prompt token is reused,
	// and the tokens are the same.
	second := generate(t, h, req)
	if second.Stats.CachedTokens != 4 {
		t.Errorf("second run reused %d cached tokens, want 4", second.Stats.CachedTokens)
	}
	if diff := cmp.Diff(first.IDs, second.IDs); diff != "" {
		t.Errorf("greedy runs differ (-first +second):\n%s", diff)
	}
	// A prompt that extends the first generation continues it exactly.
	third := generate(t, h, Request{Prompt: "Once upon a time" + first.Text[:len(first.Text)/2], MaxTokens: 4})
	if third.Stats.CachedTokens == 0 {
		t.Error("an extended prompt reused nothing from the cache")
	}
}

func TestSeededSampling(t *testing.T) {
	h := open(t)
	req := Request{Prompt: "Once upon a time", MaxTokens: 32, Sampling: sample.Params{Temperature: 1}, Seed: 7}
	a := generate(t, h, req)
	b := generate(t, h, req)
	if diff := cmp.Diff(a.IDs, b.IDs); diff != "" {
		t.Errorf("same seed, different tokens (-a +b):\n%s", diff)
	}
	req.Seed = 8
	if c := generate(t, h, req); cmp.Equal(a.IDs, c.IDs) {
		t.Error("seeds 7 and 8 gave the same 32 tokens at temperature 1")
	}
}

func TestStops(t *testing.T) {
	h := open(t)
	// stories260K ends stories with </s> well within 400 tokens of greedy text.
	long := generate(t, h, Request{Prompt: "Once upon a time", MaxTokens: 0})
	if !long.EOG && len(long.IDs)+5 < h.NCtx() {
		t.Errorf("generation of %d tokens stopped without EOG before the context end", len(long.IDs))
	}
	if long.EOG && !h.Vocab().IsEOG(long.IDs[len(long.IDs)-1]) {
		t.Error("the last token is flagged EOG but is not an end-of-generation token")
	}

	boom := errors.New("stop here")
	n := 0
	err := h.Generate(context.Background(), Request{Prompt: "Once", MaxTokens: 50}, func(Token) error {
		n++
		if n == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || n != 3 {
		t.Errorf("emit error: Generate = %v after %d tokens, want %v after 3", err, n, boom)
	}

	ctx, cancel := context.WithCancel(context.Background())
	err = h.Generate(ctx, Request{Prompt: "Once", MaxTokens: 50}, func(Token) error { cancel(); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: Generate = %v", err)
	}
}

func TestPromptErrors(t *testing.T) {
	h := open(t)
	noop := func(Token) error { return nil }
	if err := h.Generate(context.Background(), Request{}, noop); !errors.Is(err, ErrEmptyPrompt) {
		t.Errorf("empty prompt: %v", err)
	}
	if err := h.Generate(context.Background(), Request{Prompt: strings.Repeat("story ", 300)}, noop); !errors.Is(err, ErrTooLong) {
		t.Errorf("prompt longer than the context: %v", err)
	}
	if err := h.Generate(context.Background(), Request{Prompt: "x", Sampling: sample.Params{Temperature: -1}}, noop); !errors.Is(err, sample.ErrParams) {
		t.Errorf("bad sampling params: %v", err)
	}
}

func TestChatUsesChatMLWithoutTemplate(t *testing.T) {
	h := open(t)
	msgs := []chat.Message{{Role: "user", Content: "Tell me a story."}}
	toks, err := h.PromptTokens(Request{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	want, err := h.Vocab().Tokenize("<|im_start|>user\nTell me a story.<|im_end|>\n<|im_start|>assistant\n", true, true)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, toks); diff != "" {
		t.Errorf("chat prompt tokens (-ChatML +got):\n%s", diff)
	}
	if r := generate(t, h, Request{Messages: msgs, MaxTokens: 8}); len(r.IDs) == 0 {
		t.Error("chat generated nothing")
	}
}

func TestOpenErrors(t *testing.T) {
	for _, path := range []string{"testdata/missing.gguf", ".", "head.go"} {
		if _, err := Open(Config{ModelPath: path}); err == nil {
			t.Errorf("Open(%q) succeeded", path)
		} else if path == "head.go" && !errors.Is(err, ggml.ErrNotGGUF) {
			t.Errorf("Open(%q) = %v, want ErrNotGGUF", path, err)
		}
	}
}

func TestUTF8Buffer(t *testing.T) {
	euro := "€" // E2 82 AC
	tests := []struct {
		name   string
		pieces []string
		want   []string
	}{
		{"ascii passes", []string{"a", "bc"}, []string{"a", "bc"}},
		{"split character waits", []string{euro[:1], euro[1:2], euro[2:]}, []string{"", "", euro}},
		{"text before a split character goes out", []string{"x" + euro[:2], euro[2:] + "y"}, []string{"x", euro + "y"}},
		{"4-byte emoji", []string{"😀"[:3], "😀"[3:]}, []string{"", "😀"}},
		{"invalid bytes are not held", []string{"\xff", "a\x80"}, []string{"\xff", "a\x80"}},
		{"a lead byte then ASCII is invalid, not held", []string{"\xe2a"}, []string{"\xe2a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b UTF8Buffer
			var got []string
			for _, p := range tt.pieces {
				got = append(got, b.Add(p, false))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if rest := b.Flush(); rest != "" {
				t.Errorf("left pending: %q", rest)
			}
		})
	}
	var b UTF8Buffer
	if got := b.Add(euro[:1], true); got != euro[:1] {
		t.Errorf("flush returned %q, want the pending byte", got)
	}
}

// recorder is a Model that records what the loop asks of a Head.
type recorder struct {
	h     *Head
	begun int
	evals [][2]int // pos, tokens
}

func (r *recorder) Begin(ctx context.Context, toks []int32, maxTokens int) (int, error) {
	r.begun++
	return r.h.Begin(ctx, toks, maxTokens)
}

func (r *recorder) Eval(ctx context.Context, toks []int32, pos int) ([]float32, error) {
	r.evals = append(r.evals, [2]int{pos, len(toks)})
	return r.h.Eval(ctx, toks, pos)
}

// TestRunOnAModel: the loop asks a Model (a ring's as much as a Head) for
// the uncached prompt at its position, then each token it will sample after
// at the next position, never one it has no room for: with a context of 8
// and a prompt of 5, positions 5, 6 and 7 hold tokens and a fourth ends the
// reply.
func TestRunOnAModel(t *testing.T) {
	h := open(t)
	r := &recorder{h: h}
	req := Request{Prompt: "Once upon a time", MaxTokens: 0}
	var ids []int32
	st, err := Run(context.Background(), r, h.Vocab(), 8, req, func(tok Token) error { ids = append(ids, tok.ID); return nil })
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]int{{0, 5}, {5, 1}, {6, 1}, {7, 1}}
	if diff := cmp.Diff(want, r.evals); diff != "" || r.begun != 1 {
		t.Errorf("Begin %d times; evaluations {pos, tokens} (-want +got):\n%s", r.begun, diff)
	}
	if len(ids) != 4 || st.Tokens != 4 || st.DecodeTokens != 3 || st.PromptTokens != 5 || st.Started.IsZero() {
		t.Errorf("%d tokens, stats %+v: want 4 tokens, 3 decoded of a 5-token prompt", len(ids), st)
	}
	// The same tokens as Generate on a context that is not the limit.
	if g := generate(t, h, Request{Prompt: req.Prompt, MaxTokens: 4}); !cmp.Equal(g.IDs, ids) {
		t.Errorf("Run on a model = %v, Generate = %v", ids, g.IDs)
	}
}

func TestContextSize(t *testing.T) {
	for _, tt := range []struct{ n, train, want int }{
		{512, 2048, 512}, // asked: what was asked, even past training
		{8192, 2048, 8192},
		{0, 2048, 2048},  // the training context
		{0, 32768, 4096}, // at most 4096 by default
		{0, 0, 4096},     // a model that says none
		{-1, 128, 128},
	} {
		if got := ContextSize(tt.n, tt.train); got != tt.want {
			t.Errorf("ContextSize(%d, %d) = %d, want %d", tt.n, tt.train, got, tt.want)
		}
	}
}
