package head

import (
	"os"
	"slices"

	"homering/engine/gguf"
)

// DraftShare is the largest share of the target's bytes an automatically
// chosen draft may have: a draft much smaller than its target is what makes
// its proposals cheap beside a verification.
const DraftShare = 0.25

// SameVocabulary reports whether the GGUFs at a and b have the same
// tokenizer tokens list (tokenizer.ggml.tokens), so that a token id means
// the same text to both: what a draft must share with its target.
func SameVocabulary(a, b string) (bool, error) {
	ta, err := tokens(a)
	if err != nil {
		return false, err
	}
	tb, err := tokens(b)
	if err != nil {
		return false, err
	}
	return len(ta) > 0 && slices.Equal(ta, tb), nil
}

func tokens(path string) ([]string, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	t, _ := f.Strings("tokenizer.ggml.tokens")
	return t, nil
}

// PickDraft chooses the draft for the target at path among candidates
// (GGUF paths, the target's among them or not): those of the same
// vocabulary whose file is at most DraftShare of the target's, the largest
// of them (the one that agrees most); "" when none fits. Files that cannot
// be read are passed over.
func PickDraft(target string, candidates []string) string {
	ts, err := os.Stat(target)
	if err != nil {
		return ""
	}
	want, err := tokens(target)
	if err != nil || len(want) == 0 {
		return ""
	}
	best, bestSize := "", int64(0)
	for _, c := range candidates {
		cs, err := os.Stat(c)
		if err != nil || os.SameFile(cs, ts) || float64(cs.Size()) > DraftShare*float64(ts.Size()) || cs.Size() <= bestSize {
			continue
		}
		if t, err := tokens(c); err == nil && slices.Equal(t, want) {
			best, bestSize = c, cs.Size()
		}
	}
	return best
}
