// Not built for Windows: these tests stop and kill processes with signals
// and read /proc (stdio_windows_test.go covers the Windows child).

//go:build !windows

package runner

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/engine/modelgen"
)

// After a re-plan the head re-prefills the conversation: the prompt in the
// passes the first prefill used, then the tokens generated so far one per
// pass, as they were decoded (passEnd). On this random-weight model (32000
// tokens, near-tie logits) a re-prefill that batched the generated tokens
// picked other tokens than the unfaulted run after a loss at token 20 or
// 30 (checked with passEnd batching them); one-token passes give the
// unfaulted reply.
func TestRingReprefillExact(t *testing.T) {
	model := filepath.Join(t.TempDir(), "llama-3l-Q8_0.gguf")
	if err := modelgen.Generate(model, modelgen.Config{Arch: "llama", Layers: 3, Embd: 1024, FF: 2816, Heads: 8, KVHeads: 2,
		Vocab: 32000, Type: "Q8_0", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	head, w1, w2 := newDevice(t), newDevice(t), newDevice(t)
	serveRing(t, w1, head, w2)
	serveRing(t, w2, head, w1)
	lp := LoadParams{Model: model, NCtx: 512, Threads: 1}
	g := *greedy(48)
	g.Prompt = "Once upon a time"
	layers, nEmbd := modelShape(t, model)
	rp := withProblem(t, ringParams(evenPlan(1, layers, nEmbd, 1, head, w1, w2), head, w1, w2), model, head, w1, w2)
	want, _, err := ringTokens(t, head, lp, rp, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	const killAt = 20
	victim := w1.sup.PID()
	got, st, err := ringTokens(t, head, lp, rp, g, func(n int) {
		if n == killAt {
			_ = syscall.Kill(victim, syscall.SIGSTOP)
			_ = syscall.Kill(victim, syscall.SIGKILL)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Replans != 1 || st.CompletionTokens != len(want) {
		t.Fatalf("stats %+v: want one replan and %d tokens", st, len(want))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reply after a re-plan at token %d (-unfaulted +faulted)\n%s", killAt, diff)
	}
}
