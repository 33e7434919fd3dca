package job

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"homering/engine/head"
	"homering/engine/modelgen"
)

// A head and two workers in this process (loopback, mutual TLS), the
// windows of an 8-layer model spread over the three: greedy replies with a
// partly agreeing draft, verified round the ring in one pass each, are the
// single device's unspeculated replies, prompt for prompt, on a fresh job
// and on the kept one.
func TestSpeculationThroughThreeDevices(t *testing.T) {
	ctx := context.Background()
	// A generated Q8_0 target and the draft of its first layer
	// (modelgen's quiet layers): near-tie logits that flip on any
	// rounding difference, replies long enough that a batch's attention
	// would round otherwise than one-row passes without row-by-row
	// attention on every device.
	dir := t.TempDir()
	base := modelgen.Config{Arch: "llama", Embd: 256, FF: 768, Heads: 4, Vocab: 2000, Type: "Q8_0", Seed: 19}
	tc, dc := base, base
	tc.Layers, tc.QuietFrom, tc.QuietScale = 8, 1, 0.3
	dc.Layers = 1
	target, draftPath := filepath.Join(dir, "target.gguf"), filepath.Join(dir, "draft.gguf")
	for p, c := range map[string]modelgen.Config{target: tc, draftPath: dc} {
		if err := modelgen.Generate(p, c); err != nil {
			t.Fatal(err)
		}
	}
	prompts := []string{"Once upon a time", "The dog ran", "She said", "A big red ball", "Tom and Sue went to the park"}
	const maxTokens = 48
	single, err := head.Open(head.Config{ModelPath: target, NCtx: 256, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	var want [][]int32
	for _, p := range prompts {
		var ids []int32
		if err := single.Generate(ctx, head.Request{Prompt: p, MaxTokens: maxTokens}, func(tk head.Token) error { ids = append(ids, tk.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		want = append(want, ids)
	}
	draft, err := head.Open(head.Config{ModelPath: draftPath, NCtx: 256, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer draft.Close()

	d := newThreeDevices(t, target)
	m, p, hid := d.m, d.p, d.hid
	var drafted, accepted int
	for i, prompt := range prompts {
		r, err := m.Request(p, 256, hid, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []int32
		st, err := head.Run(ctx, r, m.Vocab(), 256, head.Request{Prompt: prompt, MaxTokens: maxTokens, Draft: draft, DraftTokens: 4},
			func(tk head.Token) error { got = append(got, tk.ID); return nil })
		res := r.Finish(err)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want[i]) {
			t.Fatalf("prompt %q: speculated ring reply %v, single device %v", prompt, got, want[i])
		}
		// One prompt pass, then one pass per token the target evaluated
		// that was not an accepted draft (verified in the pass before).
		if st.Verifications == 0 || res.Passes != 1+st.DecodeTokens-st.Accepted {
			t.Errorf("prompt %q: %d verifications, %d passes for %d decoded tokens, %d accepted drafts", prompt, st.Verifications, res.Passes, st.DecodeTokens, st.Accepted)
		}
		drafted += st.Drafted
		accepted += st.Accepted
	}
	t.Logf("%d of %d drafts accepted through the ring", accepted, drafted)
	if accepted == 0 || accepted == drafted {
		t.Errorf("%d of %d drafts accepted: want a draft that agrees partly", accepted, drafted)
	}
}
