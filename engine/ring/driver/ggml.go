package driver

import (
	"fmt"
	"sync"

	"homering/engine/ggml"
	"homering/engine/ring"
	"homering/engine/ring/wire"
)

// GGML is the Engine over an engine/ggml model this device has mapped (the
// full file or its slice).
type GGML struct {
	M       *ggml.Model
	NCtx    int
	Threads int
	// Sample picks the token from the head's logits; nil is greedy (argmax,
	// lowest id on ties). It runs on the driver's engine goroutine.
	Sample func(logits []float32) int32

	mu   sync.Mutex     // guards wins and out: Compute runs off the driver's loop
	wins []*ggml.Window // per round
	out  *ggml.Window   // head: output head alone, [L, L)
}

// Prepare opens this device's windows of plan.
func (g *GGML) Prepare(plan *wire.Plan, idx int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.close()
	if idx < 0 {
		return fmt.Errorf("driver: this device is not in plan %d", plan.ID)
	}
	n := g.M.Info().NLayer
	if plan.Layers != n || plan.NEmbd != g.M.Info().NEmbd || plan.DType != wire.F32 {
		return fmt.Errorf("driver: plan %d is for %d layers of %d (%s), the model has %d of %d", plan.ID, plan.Layers, plan.NEmbd, plan.DType, n, g.M.Info().NEmbd)
	}
	for r, w := range plan.Devices[idx].Windows {
		win, err := g.M.NewWindow(ggml.WindowParams{First: w.Start, Last: w.End, Embed: idx == 0 && r == 0, NCtx: g.NCtx, Threads: g.Threads})
		if err != nil {
			g.close()
			return err
		}
		g.wins = append(g.wins, win)
	}
	if idx == 0 {
		out, err := g.M.NewWindow(ggml.WindowParams{First: n, Last: n, Output: true, NCtx: g.NCtx, Threads: g.Threads})
		if err != nil {
			g.close()
			return err
		}
		g.out = out
	}
	return nil
}

func (g *GGML) close() {
	for _, w := range g.wins {
		w.Close()
	}
	g.wins = nil
	if g.out != nil {
		g.out.Close()
		g.out = nil
	}
}

// Close frees the windows.
func (g *GGML) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.close()
}

// Compute runs one action.
func (g *GGML) Compute(c ring.Compute) (ring.ComputeDone, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	done := ring.ComputeDone{Seq: c.Seq, Round: c.Round, Output: c.Output}
	win := g.out
	if !c.Output {
		if c.Round >= len(g.wins) {
			return done, fmt.Errorf("driver: no window for round %d", c.Round)
		}
		win = g.wins[c.Round]
	}
	if win == nil {
		return done, fmt.Errorf("driver: no output head on this device")
	}
	// A pass that starts before the cache end (a re-prefill) overwrites it.
	if win.KVLen() > c.Pos {
		win.KVTruncate(c.Pos)
	}
	nEmbd := g.M.Info().NEmbd
	var hidden []float32
	if c.Tokens == nil {
		hidden = wire.F32s(c.Hidden.Data)
	}
	v, err := evalChunked(win, c.Tokens, hidden, nEmbd, c.Pos)
	if err != nil {
		return done, err
	}
	if c.Output {
		if g.Sample != nil {
			done.Token = g.Sample(v)
		} else {
			done.Token = argmax(v)
		}
		return done, nil
	}
	done.Hidden = &wire.Activation{Rows: len(v) / nEmbd, NEmbd: nEmbd, DType: wire.F32, Data: wire.F32Data(v)}
	return done, nil
}

// evalChunked evaluates tokens (or hidden rows) at pos in batches of at most
// ggml.MaxBatch, as the window requires: the hidden states of every row are
// concatenated; an output window's logits are those of the last batch.
func evalChunked(win *ggml.Window, tokens []int32, hidden []float32, nEmbd, pos int) ([]float32, error) {
	rows := len(tokens)
	if tokens == nil {
		rows = len(hidden) / nEmbd
	}
	var out []float32
	for i := 0; i < rows || i == 0; i += ggml.MaxBatch {
		n := min(ggml.MaxBatch, rows-i)
		var v []float32
		var err error
		if tokens != nil {
			v, err = win.EvalTokens(tokens[i:i+n], pos+i)
		} else {
			v, err = win.EvalHidden(hidden[i*nEmbd:(i+n)*nEmbd], pos+i)
		}
		if err != nil {
			return nil, err
		}
		if win.Params().Output || rows <= ggml.MaxBatch {
			out = v
		} else {
			out = append(out, v...)
		}
	}
	return out, nil
}

func argmax(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}

// Prefetch and Release act on the window's pages.
func (g *GGML) Prefetch(w wire.Range) { g.pages(w, g.M.Prefetch) }
func (g *GGML) Release(w wire.Range)  { g.pages(w, g.M.Release) }

func (g *GGML) pages(w wire.Range, f func([]ggml.ByteRange) error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, win := range g.wins {
		if p := win.Params(); p.First == w.Start && p.Last == w.End {
			_ = f(win.WeightRanges())
		}
	}
}
