package head

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/engine/modelgen"
	"homering/internal/testdir"
)

// skewed is a real draft (a Head of the same model) whose proposal for
// every seventh position is wrong: its argmax moved to another token, so the
// target rejects it and the loop rolls both caches back. It agrees partly,
// as a small model of the same vocabulary does.
type skewed struct{ *Head }

func (s *skewed) Eval(ctx context.Context, toks []int32, pos int) ([]float32, error) {
	lg, err := s.Head.Eval(ctx, toks, pos)
	if err != nil {
		return nil, err
	}
	if (pos+len(toks))%7 == 0 { // the position proposed for

		best := argmax(lg)
		lg[(best+1)%int32(len(lg))] = lg[best] + 1
	}
	return lg, nil
}

var specPrompts = []string{
	"Once upon a time", "The dog", "Lily wanted to", "One day, a little bird", "Tom and Sue went",
	"The sun was", "She was very happy because", "\"Look!\" said", "A big red ball", "Mom said no.",
}

// TestSpeculationIsExact: greedy tokens with a draft that agrees partly, or
// wholly, are the unspeculated tokens, prompt for prompt, for several draft
// lengths; and the draft's acceptance is counted.
func TestSpeculationIsExact(t *testing.T) {
	target := open(t)
	plain := open(t)
	draft := &skewed{Head: open(t)}
	var want [][]int32
	for _, p := range specPrompts {
		want = append(want, generate(t, plain, Request{Prompt: p, MaxTokens: 40}).IDs)
	}
	for _, k := range []int{1, 3, 4, 7} {
		var drafted, accepted int
		for i, p := range specPrompts {
			got := generate(t, target, Request{Prompt: p, MaxTokens: 40, Draft: draft, DraftTokens: k})
			if diff := cmp.Diff(want[i], got.IDs); diff != "" {
				t.Fatalf("k=%d prompt %q: speculated tokens differ (-plain +speculated):\n%s", k, p, diff)
			}
			st := got.Stats
			if st.Verifications == 0 || st.Accepted > st.Drafted {
				t.Fatalf("k=%d prompt %q: stats %+v", k, p, st)
			}
			if st.DecodeTokens != len(got.IDs)-1 && !got.EOG {
				t.Errorf("k=%d prompt %q: %d decoded tokens for %d emitted", k, p, st.DecodeTokens, len(got.IDs))
			}
			drafted += st.Drafted
			accepted += st.Accepted
		}
		rate := float64(accepted) / float64(drafted)
		t.Logf("k=%d: %d of %d drafts accepted (%.0f%%)", k, accepted, drafted, 100*rate)
		if rate < 0.2 || rate > 0.9 {
			t.Errorf("k=%d: acceptance %.2f, want a partly agreeing draft (every seventh position wrong)", k, rate)
		}
	}
	// The same model as its own draft agrees wholly.
	exact := open(t)
	got := generate(t, target, Request{Prompt: "Once upon a time", MaxTokens: 40, Draft: exact, DraftTokens: 4})
	if diff := cmp.Diff(want[0], got.IDs); diff != "" {
		t.Fatalf("a draft of the same model: tokens differ:\n%s", diff)
	}
	if got.Stats.Accepted != got.Stats.Drafted {
		t.Errorf("a draft of the same model: %d of %d accepted, want all", got.Stats.Accepted, got.Stats.Drafted)
	}
	// A follow-up request reuses the target's cache, drafts included.
	again := generate(t, target, Request{Prompt: "Once upon a time", MaxTokens: 40, Draft: draft})
	if diff := cmp.Diff(want[0], again.IDs); diff != "" || again.Stats.CachedTokens != 4 {
		t.Errorf("again: %d cached, diff:\n%s", again.Stats.CachedTokens, diff)
	}
}

// TestSpeculationOnlyWhenGreedy: a request that samples at a temperature
// runs unspeculated, its seeded tokens the same with a draft or without.
func TestSpeculationOnlyWhenGreedy(t *testing.T) {
	h := open(t)
	draft := open(t)
	req := Request{Prompt: "Once upon a time", MaxTokens: 24, Seed: 3}
	req.Sampling.Temperature = 0.9
	a := generate(t, h, req)
	req.Draft = draft
	b := generate(t, h, req)
	if diff := cmp.Diff(a.IDs, b.IDs); diff != "" || b.Stats.Drafted != 0 {
		t.Errorf("sampled with a draft: drafted %d, diff:\n%s", b.Stats.Drafted, diff)
	}
}

// TestSpeculationIsExactOnAQuantizedPair: a generated Q8_0 target and the
// draft of its first layers (modelgen's quiet layers), whose near-tie
// logits flip on any rounding difference: replies of 48 tokens, past the
// positions where a batch's attention rounds otherwise than a one-row
// pass unless it attends row by row, are the unspeculated ones.
func TestSpeculationIsExactOnAQuantizedPair(t *testing.T) {
	dir := testdir.Scratch(t) // t.TempDir fails under Wine (internal/testdir)
	base := modelgen.Config{Arch: "llama", Embd: 256, FF: 768, Heads: 4, Vocab: 2000, Type: "Q8_0", Seed: 19}
	tc, dc := base, base
	tc.Layers, tc.QuietFrom, tc.QuietScale = 6, 1, 0.3
	dc.Layers = 1
	tp, dp := filepath.Join(dir, "target.gguf"), filepath.Join(dir, "draft.gguf")
	for p, c := range map[string]modelgen.Config{tp: tc, dp: dc} {
		if err := modelgen.Generate(p, c); err != nil {
			t.Fatal(err)
		}
	}
	openPath := func(p string) *Head {
		h, err := Open(Config{ModelPath: p, NCtx: 256, Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close() })
		return h
	}
	target, plain, draft := openPath(tp), openPath(tp), openPath(dp)
	var drafted, accepted int
	for _, p := range specPrompts {
		want := generate(t, plain, Request{Prompt: p, MaxTokens: 48})
		got := generate(t, target, Request{Prompt: p, MaxTokens: 48, Draft: draft, DraftTokens: 4})
		if diff := cmp.Diff(want.IDs, got.IDs); diff != "" {
			t.Fatalf("prompt %q: speculated tokens differ (-plain +speculated):\n%s", p, diff)
		}
		drafted += got.Stats.Drafted
		accepted += got.Stats.Accepted
	}
	if accepted == 0 || accepted == drafted {
		t.Errorf("%d of %d drafts accepted: want a pair that agrees partly", accepted, drafted)
	}
}
