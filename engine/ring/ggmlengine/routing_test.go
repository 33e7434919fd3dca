package ggmlengine

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"homering/engine/ggml"
	"homering/engine/gguf"
	"homering/engine/profile/modelprof"
	"homering/engine/ring"
	"homering/engine/ring/wire"
	"homering/internal/testdir"
)

// moeModel is a generated qwen3moe (8 experts, top 2) whose router is
// skewed: expert 0 is picked more often than expert 7 (engine/ggml).
const moeModel = "../../../testdata/models/qwen3moe-F32.gguf"

// fileStore is the routing store a ring job gives its engine
// (engine/ring/job): modelprof's routing files in a config directory.
type fileStore struct {
	dir    string
	model  [32]byte
	nLayer int
	t      *testing.T
}

func (s fileStore) Counts() [][]int64 {
	r, err := modelprof.LoadRouting(s.dir, s.model)
	if err != nil {
		return nil
	}
	return r.Counts
}

func (s fileStore) Add(first int, c [][]int64) {
	if err := modelprof.AddRouting(s.dir, s.model, s.nLayer, first, c); err != nil {
		s.t.Error(err)
	}
}

// runJob prepares g with plan (this device first, every window its own)
// and runs a prompt of n tokens and one decode step through its windows.
func runJob(t *testing.T, g *GGML, plan *wire.Plan, n int) {
	t.Helper()
	if err := g.Prepare(plan, 0); err != nil {
		t.Fatal(err)
	}
	toks := make([]int32, n)
	for i := range toks {
		toks[i] = int32(1 + i*37%200)
	}
	for pos, step := 0, toks; len(step) > 0; {
		var h *wire.Activation
		for r := range plan.Devices[0].Windows {
			c := ring.Compute{Round: r, Pos: pos, Hidden: h}
			if r == 0 {
				c.Tokens = step
			}
			d, err := g.Compute(c)
			if err != nil {
				t.Fatal(err)
			}
			h = d.Hidden
		}
		d, err := g.Compute(ring.Compute{Output: true, Pos: pos, Hidden: h})
		if err != nil {
			t.Fatal(err)
		}
		pos += len(step)
		step = nil
		if pos == n {
			step = []int32{d.Token}
		}
	}
}

// TestRoutingFeedsPrefetch: a ring job on a MoE model leaves its windows'
// measured routing in the store, and the next job's prefetch warms what
// that routing shows routed more than average (the always-read tensors
// and those experts only), where without it (uniform) it warms no expert.
func TestRoutingFeedsPrefetch(t *testing.T) {
	m, err := ggml.Open(moeModel)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	info := m.Info()
	id, err := modelprof.ModelID(moeModel)
	if err != nil {
		t.Fatal(err)
	}
	store := fileStore{dir: modelprof.RoutingDir(testdir.Scratch(t)), model: id, nLayer: info.NLayer, t: t}
	mid := info.NLayer / 2
	plan := &wire.Plan{ID: 1, K: 2, Layers: info.NLayer, NEmbd: info.NEmbd, DType: wire.F32,
		Devices: []wire.Device{{Windows: []wire.Range{rg(0, mid), rg(mid, info.NLayer)}}}}

	first := &GGML{M: m, NCtx: 128, Threads: 1, Routing: store}
	runJob(t, first, plan, 24)
	if store.Counts() != nil {
		t.Fatal("the routing was kept before the windows closed or counted CountComputes")
	}
	first.Close()
	counts := store.Counts()
	if len(counts) != info.NLayer {
		t.Fatalf("after a job the store holds %d layers of routing, want %d", len(counts), info.NLayer)
	}
	hot := map[int][]int{}
	for il, c := range counts {
		var sum int64
		for _, v := range c {
			sum += v
		}
		// 25 tokens (24 of the prompt, one decoded), top-k each.
		if want := int64(25 * info.NExpertUsed); sum != want {
			t.Errorf("layer %d: %d picks kept, want %d", il, sum, want)
		}
		for j, v := range c {
			if float64(v)*float64(len(c)) > float64(sum)*(1+1e-9) {
				hot[il] = append(hot[il], j)
			}
		}
	}
	if len(hot) == 0 {
		t.Fatalf("the skewed router's counts %v show no expert routed above the mean", counts)
	}

	// The next job, its engine fresh as a new job's is.
	next := &GGML{M: m, NCtx: 128, Threads: 1, Routing: store}
	if err := next.Prepare(plan, 0); err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	f, err := gguf.Open(moeModel)
	if err != nil {
		t.Fatal(err)
	}
	page := int64(os.Getpagesize())
	warmedExperts := 0
	for _, r := range next.wins {
		for _, w := range r.subs {
			rs := w.PrefetchRanges()
			p := w.Params()
			for il := p.First; il < p.Last; il++ {
				for _, tn := range f.Tensors {
					if !strings.HasPrefix(tn.Name, fmt.Sprintf("blk.%d.", il)) {
						continue
					}
					if !gguf.IsExpertTensor(tn.Name) {
						if c := covered(rs, tn.Offset, tn.Size); c != tn.Size {
							t.Errorf("%s (always read) warmed %d of %d bytes", tn.Name, c, tn.Size)
						}
						continue
					}
					n := tn.Shape[len(tn.Shape)-1]
					each := tn.Size / n
					for j := range int(n) {
						c := covered(rs, tn.Offset+int64(j)*each, each)
						switch {
						case slices.Contains(hot[il], j):
							warmedExperts++
							if c != each {
								t.Errorf("%s expert %d (routed above the mean) warmed %d of %d bytes", tn.Name, j, c, each)
							}
						case c > 2*page: // a hot neighbour's page rounding only
							t.Errorf("%s expert %d (routed at most the mean) warmed %d of %d bytes", tn.Name, j, c, each)
						}
					}
				}
			}
		}
	}
	if warmedExperts == 0 {
		t.Error("no expert warmed")
	}
}

// covered is how many bytes of [off, off+n) the ranges cover.
func covered(rs []ggml.ByteRange, off, n int64) int64 {
	var c int64
	for _, r := range rs {
		if lo, hi := max(r.Off, off), min(r.Off+r.Len, off+n); hi > lo {
			c += hi - lo
		}
	}
	return c
}
