package agent

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"homering/app/config"
	"homering/engine/modelgen"
	"homering/engine/runner"
)

// The draft setting: off is none, a path is that file, and empty picks a
// small model of the chat model's vocabulary in the model folder (once:
// a new pick only when the file or the setting changes).
func TestDraftSetting(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // no other app's model store
	models := t.TempDir()
	gen := func(name string, layers, vocab int) string {
		p := filepath.Join(models, name)
		if err := modelgen.Generate(p, modelgen.Config{Arch: "llama", Layers: layers, Embd: 128, FF: 256, Heads: 4, Vocab: vocab, Type: "F32", Seed: 5}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	target := gen("target.gguf", 16, 1000)
	small := gen("small.gguf", 1, 1000)
	gen("other.gguf", 1, 1200) // another vocabulary
	dir := t.TempDir()
	if err := config.SaveSettings(dir, config.Settings{ContextTokens: 512, ModelDir: models, APIPort: 1}); err != nil {
		t.Fatal(err)
	}
	b := &Agent{dir: dir, log: slog.New(slog.DiscardHandler)}
	if got := b.draftFor(target, ""); got != small {
		t.Errorf("picked draft %q, want %q", got, small)
	}
	if got := b.draftFor(target, config.DraftOff); got != "" {
		t.Errorf("draft off: %q", got)
	}
	if got := b.draftFor(target, "/some/draft.gguf"); got != "/some/draft.gguf" {
		t.Errorf("a set draft: %q", got)
	}
	// The picked draft deleted: the next chat picks again (none is left).
	if err := os.Remove(small); err != nil {
		t.Fatal(err)
	}
	if got := b.draftFor(target, ""); got != "" {
		t.Errorf("after the draft was deleted: %q", got)
	}
	if err := (config.Settings{ContextTokens: 512, APIPort: 1, Draft: small}).Validate(); err == nil {
		t.Error("a draft setting naming a missing file was accepted")
	}
}

// A chat's stats carry the draft's acceptance; a chat without one none.
func TestChatStatsDraftAcceptance(t *testing.T) {
	st := chatStats(runner.Stats{CompletionTokens: 20, DecodeTokens: 19, DecodeMS: 100, Drafted: 10, Accepted: 7}, "m")
	if st.Drafted != 10 || st.DraftAcceptance != 0.7 {
		t.Errorf("drafted %d, acceptance %g; want 10, 0.7", st.Drafted, st.DraftAcceptance)
	}
	if st := chatStats(runner.Stats{CompletionTokens: 20}, "m"); st.Drafted != 0 || st.DraftAcceptance != 0 {
		t.Errorf("no draft: %+v", st)
	}
}
