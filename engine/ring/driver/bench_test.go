package driver

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"homering/engine/ggml"
	"homering/engine/ring"
	"homering/engine/ring/ggmlengine"
	"homering/engine/ring/wire"
)

// BenchmarkDecodeToken: one greedy decode step on stories260K, the whole
// model in one window (single) vs two devices in one process over transport
// frames on net.Pipe (ring2, k=1): the ring's own overhead per token.
func BenchmarkDecodeToken(b *testing.B) {
	b.Run("single", func(b *testing.B) {
		m, err := ggml.Open(stories)
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		w, err := m.NewWindow(ggml.WindowParams{First: 0, Last: m.Info().NLayer, Embed: true, Output: true, NCtx: 4096, Threads: 1})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		if _, err := w.EvalTokens(prompt, 0); err != nil {
			b.Fatal(err)
		}
		pos := len(prompt)
		b.ResetTimer()
		for range b.N {
			if pos >= 4000 {
				w.KVTruncate(len(prompt))
				pos = len(prompt)
			}
			if _, err := w.EvalTokens([]int32{3}, pos); err != nil {
				b.Fatal(err)
			}
			pos++
		}
	})
	b.Run("ring2", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		var ms []*ggml.Model
		for range 2 {
			m, err := ggml.Open(stories)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			ms = append(ms, m)
		}
		ea, eb := &ggmlengine.GGML{M: ms[0], NCtx: 4096, Threads: 1}, &ggmlengine.GGML{M: ms[1], NCtx: 4096, Threads: 1}
		defer ea.Close()
		defer eb.Close()
		da := New(ring.New(tid("a"), 250), ea, 250*time.Millisecond, log)
		db := New(ring.New(tid("b"), 250), eb, 250*time.Millisecond, log)
		pipe(b, ctx, da, "a", db, "b")
		go func() { _ = da.Run(ctx) }()
		go func() { _ = db.Run(ctx) }()
		go func() {
			for range db.Out() {
			}
		}()
		n := ms[0].Info().NLayer
		plan := &wire.Plan{ID: 1, K: 1, Layers: n, NEmbd: ms[0].Info().NEmbd, DType: wire.F32, Devices: []wire.Device{
			{ID: tid("a"), Windows: []wire.Range{rg(0, n/2)}}, {ID: tid("b"), Windows: []wire.Range{rg(n/2, n)}}}}
		_ = da.Post(ctx, ring.PlanInstalled{Plan: plan})
		next := func() ring.Action {
			select {
			case a := <-da.Out():
				return a
			case <-time.After(30 * time.Second):
				b.Fatal("the ring did not answer within 30 s")
				return nil
			}
		}
		for {
			if _, ok := next().(ring.Ready); ok {
				break
			}
		}
		step := func(in []int32, pos int) {
			_ = da.Post(ctx, ring.StartToken{Tokens: in, Pos: pos})
			for {
				if _, ok := next().(ring.EmitToken); ok {
					return
				}
			}
		}
		step(prompt, 0)
		pos := len(prompt)
		b.ResetTimer()
		for range b.N {
			if pos >= 4000 {
				pos = len(prompt) // the engine truncates KV when a pass starts before its end
			}
			step([]int32{3}, pos)
			pos++
		}
	})
}
