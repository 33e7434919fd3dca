package ggmlengine

import (
	"fmt"
	"slices"
	"testing"

	"homering/discovery/deviceid"
	"homering/engine/ggml"
	"homering/engine/ring"
	"homering/engine/ring/wire"
)

// Streams keep their own KV on every device: 2 and 4 conversations whose
// passes alternate on one two-device ring (k=2, a generated model) each
// give, bit for bit, the logits and greedy tokens of running alone on a
// fresh ring; and a stream's windows are opened only when it first
// computes (Memory grows by one set of KV per stream).
func TestStreamsEqualAlone(t *testing.T) {
	m, err := ggml.Open(generated)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	info := m.Info()
	L := info.NLayer
	plan := &wire.Plan{ID: 1, K: 2, Layers: L, NEmbd: info.NEmbd, DType: wire.F32, Devices: []wire.Device{
		{ID: deviceid.ForName("a"), Windows: []wire.Range{rg(0, L/4), rg(L/2, 3*L/4)}},
		{ID: deviceid.ForName("b"), Windows: []wire.Range{rg(L/4, L/2), rg(3*L/4, L)}},
	}}
	prompts := [][]int32{{1, 403, 407, 261, 378}, {1, 17, 99}, {1, 250, 12, 77, 300, 5, 42}, {1, 8}}
	const steps = 6

	type ringPair struct{ a, b *GGML }
	open := func() ringPair {
		p := ringPair{&GGML{M: m, NCtx: 64, Threads: 1}, &GGML{M: m, NCtx: 64, Threads: 1}}
		for i, e := range []*GGML{p.a, p.b} {
			if err := e.Prepare(plan, i); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	// pass runs toks of stream at pos through both devices and returns the
	// greedy token and the logits.
	pass := func(p ringPair, stream int, toks []int32, pos int) (int32, []float32) {
		var logits []float32
		p.a.Sample = func(l []float32) int32 { logits = slices.Clone(l); return Greedy(l) }
		var h *wire.Activation
		for r := range plan.K {
			for i, e := range []*GGML{p.a, p.b} {
				c := ring.Compute{Round: r, Window: plan.Devices[i].Windows[r], Pos: pos, Hidden: h, Stream: stream}
				if h == nil {
					c.Tokens = toks
				}
				done, err := e.Compute(c)
				if err != nil {
					t.Fatal(err)
				}
				h = done.Hidden
			}
		}
		done, err := p.a.Compute(ring.Compute{Output: true, Pos: pos, Hidden: h, Stream: stream})
		if err != nil {
			t.Fatal(err)
		}
		return done.Token, logits
	}
	type result struct {
		toks   []int32
		logits [][]float32
	}
	alone := make([]result, len(prompts))
	for i, pr := range prompts {
		p := open()
		tok, l := pass(p, 0, pr, 0)
		alone[i] = result{[]int32{tok}, [][]float32{l}}
		for s := range steps {
			tok, l = pass(p, 0, []int32{tok}, len(pr)+s)
			alone[i].toks, alone[i].logits = append(alone[i].toks, tok), append(alone[i].logits, l)
		}
		p.a.Close()
		p.b.Close()
	}
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d streams", n), func(t *testing.T) {
			p := open()
			defer p.a.Close()
			defer p.b.Close()
			kv1, _ := p.b.Memory()
			got := make([]result, n)
			last := make([]int32, n)
			// Stream s is conversation s, its passes alternating with
			// the others' (the prompts too).
			for step := 0; step <= steps; step++ {
				for s := range n {
					toks, pos := []int32{last[s]}, len(prompts[s])+step-1
					if step == 0 {
						toks, pos = prompts[s], 0
					}
					tok, l := pass(p, s, toks, pos)
					last[s] = tok
					got[s].toks, got[s].logits = append(got[s].toks, tok), append(got[s].logits, l)
				}
			}
			for s := range n {
				if !slices.Equal(got[s].toks, alone[s].toks) {
					t.Errorf("stream %d: tokens %v, alone %v", s, got[s].toks, alone[s].toks)
				}
				for i := range got[s].logits {
					if !slices.Equal(got[s].logits[i], alone[s].logits[i]) {
						t.Errorf("stream %d: logits of pass %d differ from alone", s, i)
						break
					}
				}
			}
			if kv, _ := p.b.Memory(); kv != int64(n)*kv1 {
				t.Errorf("worker KV %d bytes with %d streams, want %d × the %d of one", kv, n, n, kv1)
			}
		})
	}
}
