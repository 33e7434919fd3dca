package ggml

import (
	"errors"
	"math"
	"path/filepath"
	"testing"
)

// A KV cache rounded to 32 cells instead of 256 computes the same bits:
// the span attended over is padded to 32 either way, and only the cache's
// row stride differs. A prompt and decode steps past a multiple of 32, on
// every generated model and stories260K, one window and a split.
func TestKVRoundSameBits(t *testing.T) {
	for _, path := range testModels(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			m := openT(t, path)
			defer m.Close()
			n := m.Info().NLayer
			split := n / 2
			toks := []int32{1, 5, 9, 2, 7, 3, 11, 4, 6, 8, 10, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30}
			run := func(round int) (logits [][]float32, kvBytes int64) {
				const nCtx = 40
				a, err := m.NewWindow(WindowParams{First: 0, Last: split, Embed: true, NCtx: nCtx, KVRound: round, Threads: 1})
				if err != nil {
					t.Fatal(err)
				}
				defer a.Close()
				b, err := m.NewWindow(WindowParams{First: split, Last: n, Output: true, NCtx: nCtx, KVRound: round, Threads: 1})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				step := func(in []int32, pos int) []float32 {
					h, err := a.EvalTokens(in, pos)
					if err != nil {
						t.Fatal(err)
					}
					l, err := b.EvalHidden(h, pos)
					if err != nil {
						t.Fatal(err)
					}
					return l
				}
				logits = append(logits, step(toks, 0))
				for pos := len(toks); pos < nCtx; pos++ { // across the 32-cell boundary
					logits = append(logits, step([]int32{int32(pos % 17)}, pos))
				}
				return logits, a.KVBytes() + b.KVBytes()
			}
			want, wantKV := run(0)
			got, gotKV := run(32)
			for i := range want {
				for j := range want[i] {
					if math.Float32bits(want[i][j]) != math.Float32bits(got[i][j]) {
						t.Fatalf("step %d logit %d: %v with 32-cell rounding, %v with 256", i, j, got[i][j], want[i][j])
					}
				}
			}
			if n > split && gotKV*4 != wantKV { // 64 cells instead of 256
				t.Errorf("KV bytes %d with 32-cell rounding, %d with 256: want a quarter", gotKV, wantKV)
			}
		})
	}
}

func TestKVRoundChecked(t *testing.T) {
	m := openT(t, stories)
	defer m.Close()
	for _, r := range []int{-32, 16, 100} {
		if _, err := m.NewWindow(WindowParams{First: 0, Last: 1, Embed: true, NCtx: 64, KVRound: r}); !errors.Is(err, ErrBadWindow) {
			t.Errorf("KVRound %d: %v, want ErrBadWindow", r, err)
		}
	}
}
