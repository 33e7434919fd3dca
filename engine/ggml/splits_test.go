package ggml

import "testing"

// TestGraphSplitsCPU: a CPU-only window's graph is one split, and there is
// no graph before the first evaluation. engine/gputest counts the splits
// with GPU layers.
func TestGraphSplitsCPU(t *testing.T) {
	m := openT(t, stories)
	info := m.Info()
	w := newWindowT(t, m, WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, NCtx: testNCtx, Threads: 1})
	if got := w.GraphSplits(); got != 0 {
		t.Errorf("before the first evaluation: %d splits, want 0", got)
	}
	if _, err := w.EvalTokens(prompt(info.NVocab), 0); err != nil {
		t.Fatal(err)
	}
	if got := w.GraphSplits(); got != 1 {
		t.Errorf("after a prompt on the CPU: %d splits, want 1", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := w.GraphSplits(); got != 0 {
		t.Errorf("closed: %d splits, want 0", got)
	}
}
