package ggmlengine

import (
	"fmt"
	"slices"
	"sync"

	"homering/engine/ggml"
	"homering/engine/ring"
	"homering/engine/ring/wire"
)

// GGML is the ring driver's Engine (driver.Engine) over the engine/ggml
// model files this device has mapped: the full file or its slice (M), or
// several slices (Parts).
type GGML struct {
	M *ggml.Model
	// Parts, when set, replace M: mapped files and the layers each runs
	// (sorted, disjoint), as a worker holds them after a re-plan (its cached
	// slices and one with the layers it lacked). A window spanning several
	// parts runs as consecutive sub-windows, one per part, each with its own
	// KV cache; chained in one process they give the window's bits
	// (engine/ggml). Set them before Prepare; they cannot hold the token
	// embedding or the output head (a worker's windows never do).
	Parts   []Part
	NCtx    int
	Threads int
	// Sample picks the token from the head's logits; nil is greedy (argmax,
	// lowest id on ties). It runs on the driver's engine goroutine.
	Sample func(logits []float32) int32

	// streams holds the windows of streams 1 and up (ring.Compute.Stream;
	// stream 0's are wins), opened at a stream's first compute on the
	// plan (of windowsOf, windowsAt): the same mapped weights, their own
	// KV caches and compute buffers. Guarded by mu.
	streams   map[int][]round
	windowsOf *wire.Plan
	windowsAt int
	// Routing, when set for a MoE model, is this device's measured routing
	// of it (issue 20 item 5): Prepare gives each mapped model the
	// frequencies it keeps, so that Prefetch warms the experts routed
	// most, and counts the routers' picks of the first CountComputes
	// computes, which it adds to the store (then, or when the windows
	// close).
	Routing RoutingStore

	mu      sync.Mutex   // guards wins, out, dtype and counted: Compute runs off the driver's loop
	counted int          // computes counted since Prepare; -1: not counting
	wins    []round      // per round
	out     *ggml.Window // head: output head alone, [L, L)
	dtype   wire.DType   // the plan's hidden states on the wire (F32 or F16)
}

// RoutingStore keeps a model's measured routing (engine/profile/modelprof's
// routing files, in the job).
type RoutingStore interface {
	// Counts are the picks per model layer and expert kept so far; nil
	// when none.
	Counts() [][]int64
	// Add adds picks of layers [first, first+len(counts)).
	Add(first int, counts [][]int64)
}

// CountComputes is how many computes after Prepare count the routers'
// picks: a prompt and a reply's first tokens show the skew, and counting
// splits every graph at each layer's selection (ggml.Window.CountExperts),
// which costs every token after it too.
const CountComputes = 64

// Part is a mapped file and the layers [First, Last) this device runs on it.
type Part struct {
	First, Last int
	M           *ggml.Model
}

// round is one plan window as the sub-windows that compute it, in order.
type round struct {
	w    wire.Range
	subs []*ggml.Window
	ms   []*ggml.Model // subs[i]'s model
}

func (g *GGML) info() ggml.ModelInfo {
	if g.M == nil && len(g.Parts) > 0 {
		return g.Parts[0].M.Info()
	}
	return g.M.Info()
}

// split cuts window w at the parts' boundaries.
func (g *GGML) split(w wire.Range) ([]Part, error) {
	if len(g.Parts) == 0 {
		return []Part{{First: w.Start, Last: w.End, M: g.M}}, nil
	}
	var out []Part
	at := w.Start
	for _, p := range g.Parts {
		if at < w.End && p.First <= at && at < p.Last {
			out = append(out, Part{First: at, Last: min(p.Last, w.End), M: p.M})
			at = min(p.Last, w.End)
		}
	}
	if at < w.End || w.Start == w.End {
		return nil, fmt.Errorf("ggmlengine: no mapped file holds layer %d of window [%d, %d)", at, w.Start, w.End)
	}
	return out, nil
}

// Prepare opens this device's windows of plan.
func (g *GGML) Prepare(plan *wire.Plan, idx int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.close()
	if idx < 0 {
		return fmt.Errorf("ggmlengine: this device is not in plan %d", plan.ID)
	}
	if g.M == nil && len(g.Parts) == 0 {
		return fmt.Errorf("ggmlengine: no model mapped for plan %d", plan.ID)
	}
	info := g.info()
	n := info.NLayer
	if plan.Layers != n || plan.NEmbd != info.NEmbd || plan.DType != wire.F32 && plan.DType != wire.F16 {
		return fmt.Errorf("ggmlengine: plan %d is for %d layers of %d (%s), the model has %d of %d", plan.ID, plan.Layers, plan.NEmbd, plan.DType, n, info.NEmbd)
	}
	if idx == 0 && g.M == nil {
		return fmt.Errorf("ggmlengine: the head of plan %d needs its model file (M), not parts", plan.ID)
	}
	g.dtype = plan.DType
	wins, err := g.open(plan, idx)
	if err != nil {
		return err
	}
	g.wins, g.windowsOf, g.windowsAt = wins, plan, idx
	g.routing()
	if idx == 0 {
		// The output head stays on the CPU: Halda charges it there (κ, the
		// head's output layer) and n_m counts only repeating layers.
		out, err := g.M.NewWindow(ggml.WindowParams{First: n, Last: n, Output: true, NCtx: g.NCtx, KVRound: kvRound, Threads: g.Threads})
		if err != nil {
			g.close()
			return err
		}
		g.out = out
	}
	return nil
}

// gpuLayers are the layers of the sub-window [first, last) of window w that
// run on the GPU: Halda's n_m are the first n of each window (the paper's
// layout: a window's hidden state crosses to the GPU once and back once).
// nil when none.
func gpuLayers(w wire.Range, n, first, last int) []int {
	var out []int
	for il := max(first, w.Start); il < min(last, w.Start+n, w.End); il++ {
		out = append(out, il)
	}
	return out
}

func (r round) close() {
	for _, w := range r.subs {
		_ = w.Close()
	}
}

// routing gives the mapped models the kept routing and starts counting
// (g.mu held). Without a store, on a dense model, or when ggml cannot
// count, nothing.
func (g *GGML) routing() {
	g.counted = -1
	if g.Routing == nil || g.info().NExpert == 0 {
		return
	}
	if c := g.Routing.Counts(); c != nil {
		freq := make([][]float64, len(c))
		for i, row := range c {
			freq[i] = make([]float64, len(row))
			for j, v := range row {
				freq[i][j] = float64(v)
			}
		}
		for _, m := range g.models() {
			_ = m.SetExpertFrequencies(freq) // a file of another shape: uniform
		}
	}
	for _, r := range g.wins {
		for _, w := range r.subs {
			if w.CountExperts(true) != nil {
				return
			}
		}
	}
	g.counted = 0
}

// models are the mapped models, each once.
func (g *GGML) models() []*ggml.Model {
	if len(g.Parts) == 0 {
		return []*ggml.Model{g.M}
	}
	var out []*ggml.Model
	for _, p := range g.Parts {
		if !slices.Contains(out, p.M) {
			out = append(out, p.M)
		}
	}
	return out
}

// harvest hands the windows' counts to the store and stops counting (g.mu
// held).
func (g *GGML) harvest() {
	if g.counted < 0 {
		return
	}
	g.counted = -1
	for _, r := range g.wins {
		for _, w := range r.subs {
			if c := w.ExpertCounts(); c != nil {
				g.Routing.Add(w.Params().First, c)
			}
			_ = w.CountExperts(false)
		}
	}
}

// open opens one set of this device's windows of plan, one per round.
func (g *GGML) open(plan *wire.Plan, idx int) ([]round, error) {
	var out []round
	fail := func(err error) ([]round, error) {
		for _, r := range out {
			r.close()
		}
		return nil, err
	}
	nGPU := plan.Devices[idx].GPULayers
	for r, w := range plan.Devices[idx].Windows {
		parts, err := g.split(w)
		if err != nil {
			return fail(err)
		}
		rd := round{w: w}
		for i, p := range parts {
			win, err := p.M.NewWindow(ggml.WindowParams{First: p.First, Last: p.Last, Embed: idx == 0 && r == 0 && i == 0,
				GPULayers: gpuLayers(w, nGPU, p.First, p.Last), NCtx: g.NCtx, KVRound: kvRound, Threads: g.Threads})
			if err != nil {
				rd.close()
				return fail(err)
			}
			rd.subs, rd.ms = append(rd.subs, win), append(rd.ms, p.M)
		}
		out = append(out, rd)
	}
	return out, nil
}

// stream returns stream's windows (g.mu held), opening them at its first
// compute on the plan. A stream's windows stay open until the plan's do:
// a conversation's next turn finds its KV there.
func (g *GGML) stream(stream int) ([]round, error) {
	if stream == 0 {
		return g.wins, nil
	}
	if stream < 0 || stream >= wire.MaxStreams || g.windowsOf == nil {
		return nil, fmt.Errorf("ggmlengine: no windows for stream %d", stream)
	}
	if wins, ok := g.streams[stream]; ok {
		return wins, nil
	}
	wins, err := g.open(g.windowsOf, g.windowsAt)
	if err != nil {
		return nil, fmt.Errorf("ggmlengine: opening the windows of stream %d: %w", stream, err)
	}
	if g.streams == nil {
		g.streams = map[int][]round{}
	}
	g.streams[stream] = wins
	return wins, nil
}

func (g *GGML) close() {
	for _, rs := range g.streams {
		for _, r := range rs {
			r.close()
		}
	}
	g.streams, g.windowsOf = nil, nil
	g.harvest()
	for _, r := range g.wins {
		r.close()
	}
	g.wins = nil
	if g.out != nil {
		_ = g.out.Close()
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
	subs := []*ggml.Window{g.out}
	if !c.Output {
		wins, err := g.stream(c.Stream)
		if err != nil {
			return done, err
		}
		if c.Round >= len(wins) {
			return done, fmt.Errorf("ggmlengine: no window for round %d", c.Round)
		}
		subs = wins[c.Round].subs
	}
	if subs[0] == nil {
		return done, fmt.Errorf("ggmlengine: no output head on this device")
	}
	nEmbd := g.info().NEmbd
	tokens := c.Tokens
	var v []float32
	if tokens == nil {
		v = wire.Floats(c.Hidden) // the session checked its dtype against the plan
	}
	for _, win := range subs {
		// A pass that starts before the cache end (a re-prefill, the
		// rejected drafts of a verification) overwrites it.
		if win.KVLen() > c.Pos {
			win.KVTruncate(c.Pos)
		}
		var err error
		if c.Verify {
			// Every row the bits of a one-row pass, and the logits of
			// every row (engine/head's speculative decoding).
			win.SetRowAttention(true)
			win.SetAllLogits(true)
		}
		v, err = evalChunked(win, tokens, v, nEmbd, c.Pos)
		if c.Verify {
			win.SetRowAttention(false)
			win.SetAllLogits(false)
		}
		if err != nil {
			return done, err
		}
		tokens = nil // the next sub-window takes this one's hidden states
	}
	if g.counted >= 0 && !c.Output {
		if g.counted++; g.counted >= CountComputes*max(len(g.wins), 1) {
			g.harvest()
		}
	}
	if c.Output {
		if g.Sample != nil {
			done.Token = g.Sample(v)
		} else {
			done.Token = Greedy(v)
		}
		return done, nil
	}
	done.Hidden = &wire.Activation{Rows: len(v) / nEmbd, NEmbd: nEmbd, DType: g.dtype, Verify: c.Verify, Data: wire.Data(g.dtype, v)}
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

// Greedy is the head's default sampling: the token of the largest logit,
// the lowest id on ties. Tests compare single-device runs with it.
func Greedy(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}

// Prefetch and Release act on the window's pages (in every file it spans).
// Prefetch warms what the next token most likely reads (of a MoE layer, not
// its cold experts: ggml.Window.PrefetchRanges); Release lets all go.
func (g *GGML) Prefetch(w wire.Range) {
	g.pages(w, (*ggml.Window).PrefetchRanges, (*ggml.Model).Prefetch)
}
func (g *GGML) Release(w wire.Range) { g.pages(w, (*ggml.Window).WeightRanges, (*ggml.Model).Release) }

func (g *GGML) pages(w wire.Range, which func(*ggml.Window) []ggml.ByteRange, f func(*ggml.Model, []ggml.ByteRange) error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.wins {
		if r.w == w {
			for i, win := range r.subs {
				_ = f(r.ms[i], which(win))
			}
		}
	}
}
