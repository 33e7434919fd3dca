package head

import (
	"path/filepath"
	"testing"

	"homering/engine/modelgen"
	"homering/internal/testdir"
)

// PickDraft takes the largest model of the target's vocabulary that is
// small enough, never the target itself, one of another vocabulary or one
// too large.
func TestPickDraft(t *testing.T) {
	dir := testdir.Scratch(t) // t.TempDir fails under Wine (internal/testdir)
	gen := func(name string, layers, vocab int) string {
		p := filepath.Join(dir, name)
		if err := modelgen.Generate(p, modelgen.Config{Arch: "llama", Layers: layers, Embd: 128, FF: 256, Heads: 4, Vocab: vocab, Type: "F32", Seed: 3}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	target := gen("target.gguf", 24, 1000)
	tiny := gen("tiny.gguf", 1, 1000)
	small := gen("small.gguf", 3, 1000)
	big := gen("big.gguf", 12, 1000)    // half the target: too large
	other := gen("other.gguf", 4, 1200) // another vocabulary
	all := []string{target, tiny, small, big, other, stories260K}
	if got := PickDraft(target, all); got != small {
		t.Errorf("PickDraft = %q, want %q", got, small)
	}
	if got := PickDraft(target, []string{target, big, other, stories260K}); got != "" {
		t.Errorf("no fitting draft: PickDraft = %q, want none", got)
	}
	same, err := SameVocabulary(target, tiny)
	if err != nil || !same {
		t.Errorf("SameVocabulary(target, tiny) = %v, %v", same, err)
	}
	if same, err := SameVocabulary(target, stories260K); err != nil || same {
		t.Errorf("SameVocabulary(target, stories260K) = %v, %v", same, err)
	}
}
