//go:build linux

package apptest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// contributing sets each node contributing with a context of ctxTokens and
// starts them side by side.
func contributing(t *testing.T, ctxTokens int, nodes ...*Node) {
	t.Helper()
	for _, n := range nodes {
		n.MustCLI(t, "contribute", "on")
		settings := fmt.Sprintf(`{"context_tokens": %d}`, ctxTokens)
		if err := os.WriteFile(filepath.Join(n.Home, "settings.json"), []byte(settings), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.Start(t) }()
	}
	wg.Wait()
}

// ringMatchesOneDevice generates a model with `homering gen-model genArgs`
// and checks that three agents in network namespaces, one ring, give the
// single device's greedy 32 tokens (issue 20 item 1's ring proof of a
// family).
func ringMatchesOneDevice(t *testing.T, family string, genArgs ...string) {
	env := NewEnv(t)
	a, b, c := env.NewNode(t, "a"), env.NewNode(t, "b"), env.NewNode(t, "c")
	gen := filepath.Join(t.TempDir(), family+".gguf")
	out, err := exec.Command(env.Bin, append(append([]string{"gen-model"}, genArgs...), "-o", gen)...).CombinedOutput()
	if err != nil {
		t.Fatalf("gen-model: %v\n%s", err, out)
	}
	contributing(t, 512, a, b, c)

	const prompt = "Once upon a time"
	want, st := chat(t, a, "-m", gen, "-n", "32", prompt)
	if st.Ring != nil || st.CompletionTokens == 0 {
		t.Fatalf("reference chat: ring %+v, %d tokens; want this device alone", st.Ring, st.CompletionTokens)
	}
	pairWorkers(t, a, b, c)
	got, st := chat(t, a, "-m", gen, "-n", "32", "--devices", "all", "--rounds", "1", prompt)
	if st.Ring == nil || len(st.Ring.Devices) != 3 {
		t.Fatalf("ring %+v, want 3 devices", st.Ring)
	}
	if got != want {
		t.Errorf("ring reply differs from the single-device reply:\n ring: %q\n one:  %q", got, want)
	}
	var windows []string
	for _, d := range st.Ring.Devices {
		for _, w := range d.Windows {
			windows = append(windows, fmt.Sprintf("%s [%d,%d)", d.Short, w.Start, w.End))
		}
	}
	t.Logf("%s across 3 devices (%s): %d tokens, the single device's; TTFT %.0f ms, TPOT %.2f ms/token",
		family, strings.Join(windows, ", "), st.CompletionTokens, st.TTFTMS, st.TPOTMS)
}

// TestRingMoE: a mixture-of-experts model, a generated qwen3moe (6 layers
// of 8 routed experts, top-2). Each device's windows run the expert layers
// with ggml_mul_mat_id, so the split points fall between MoE layers.
func TestRingMoE(t *testing.T) {
	ringMatchesOneDevice(t, "qwen3moe", "-arch", "qwen3moe", "-layers", "6", "-heads", "8", "-kv-heads", "2",
		"-head-dim", "64", "-type", "Q8_0")
}

// TestRingGemma: a generated gemma3 (7 layers, sliding window 16 on all but
// layer 5). The chat template's prompt and 32 tokens run past the window,
// so each device's sliding-window layers mask by position across the ring,
// and the embedding scale and the soft-capped head sit on the first and
// last device.
func TestRingGemma(t *testing.T) {
	ringMatchesOneDevice(t, "gemma3", "-arch", "gemma3", "-layers", "7", "-heads", "4", "-kv-heads", "2",
		"-head-dim", "128", "-type", "Q8_0", "-tied", "-sliding-window", "16", "-final-softcap", "30")
}
