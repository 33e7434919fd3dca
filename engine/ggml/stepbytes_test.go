package ggml

import "testing"

// TestStepBytes: a decode step of a whole stories260K window reads its
// weights less the embedding table plus one row of it, and each position
// more reads one more K and V row of every layer.
func TestStepBytes(t *testing.T) {
	m := openT(t, stories)
	info := m.Info()
	w := newWindowT(t, m, WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, NCtx: 64, Threads: 1})
	var all int64
	for _, r := range w.WeightRanges() {
		all += r.Len
	}
	emb, ok := m.file.tensor("token_embd.weight")
	if !ok {
		t.Fatal("stories260K has no token_embd.weight")
	}
	kvRow := int64(info.NLayer * 2 * info.NHeadKV * info.NEmbdHead * 2)
	if m.hasOutputWeight() {
		if got, want := w.StepBytes(0), all-emb.size+emb.size/int64(info.NVocab)+kvRow; got != want {
			t.Errorf("StepBytes(0) = %d, want %d (weights %d less the embedding table %d plus one row, plus one K and V row %d)",
				got, want, all, emb.size, kvRow)
		}
	} else if got, want := w.StepBytes(0), all+kvRow; got != want { // tied: the output head reads the table
		t.Errorf("StepBytes(0) = %d, want %d (weights %d, tied output, plus one K and V row %d)", got, want, all, kvRow)
	}
	if got := w.StepBytes(10) - w.StepBytes(9); got != kvRow {
		t.Errorf("StepBytes(10) - StepBytes(9) = %d, want one K and V row of every layer, %d", got, kvRow)
	}
}
