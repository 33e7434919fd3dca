package main

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"homering/discovery/deviceid"
	"homering/discovery/identity"
	"homering/engine/head"
	"homering/engine/modelgen"
	"homering/engine/ring/job"
	"homering/engine/ring/wire"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "specbench:", err)
		os.Exit(1)
	}
}

type config struct {
	dir                      string
	layers, draftLayers      int
	embd, ff, heads, vocab   int
	typ                      string
	scale                    float64
	tokens, k, threads, reps int
	prompts                  []string
	ring                     bool
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("specbench", flag.ContinueOnError)
	var c config
	fs.StringVar(&c.dir, "dir", "testdata/models/bench-spec", "folder of the generated pair (kept across runs)")
	fs.IntVar(&c.layers, "layers", 16, "target layers")
	fs.IntVar(&c.draftLayers, "draft-layers", 1, "draft layers (the target's first)")
	fs.IntVar(&c.embd, "embd", 1024, "embedding length")
	fs.IntVar(&c.ff, "ff", 2816, "feed-forward length")
	fs.IntVar(&c.heads, "heads", 16, "attention heads")
	fs.IntVar(&c.vocab, "vocab", 8000, "vocabulary")
	fs.StringVar(&c.typ, "type", "Q8_0", "weight type")
	fs.Float64Var(&c.scale, "scale", 0.045, "the quiet layers' output projection scale (0: the draft agrees always)")
	fs.IntVar(&c.tokens, "tokens", 48, "tokens per reply")
	fs.IntVar(&c.k, "k", 3, "drafted tokens per verification")
	fs.IntVar(&c.threads, "threads", 1, "threads per device")
	fs.IntVar(&c.reps, "reps", 5, "repetitions of each verification size")
	fs.BoolVar(&c.ring, "ring", true, "also through a ring of three devices in this process (loopback)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c.prompts = []string{"Once upon a time", "The quick brown fox", "In the beginning", "Tell me a story about a dog"}
	target, draft, err := c.models()
	if err != nil {
		return err
	}
	ctx := context.Background()
	nCtx := 512
	th, err := head.Open(head.Config{ModelPath: target, NCtx: nCtx, Threads: c.threads})
	if err != nil {
		return err
	}
	defer th.Close()
	dh, err := head.Open(head.Config{ModelPath: draft, NCtx: nCtx, Threads: c.threads})
	if err != nil {
		return err
	}
	defer dh.Close()

	fmt.Fprintf(out, "target %s (%d layers, layers %d+ scaled by %g), draft %s (%d layers), %s, %d tokens per reply, k = %d, %d thread(s)\n",
		filepath.Base(target), c.layers, c.draftLayers, c.scale, filepath.Base(draft), c.draftLayers, c.typ, c.tokens, c.k, c.threads)
	costs, err := verifyCost(ctx, th, c)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "verification cost, n tokens in one pass / 1 token (one device, median of %d):", c.reps)
	for n, r := range costs {
		fmt.Fprintf(out, " n=%d %.2f", n+1, r)
	}
	fmt.Fprintln(out)

	var rows []row
	single := func(req head.Request) (head.Stats, []int32, error) {
		var ids []int32
		st, err := head.Run(ctx, th, th.Vocab(), th.NCtx(), req, func(t head.Token) error { ids = append(ids, t.ID); return nil })
		return st, ids, err
	}
	r, err := c.compare("one device", dh, single)
	if err != nil {
		return err
	}
	rows = append(rows, r)
	if c.ring {
		rg, stop, err := c.ringRun(ctx, target, nCtx)
		if err != nil {
			return err
		}
		r, err := c.compare("ring of 3 (loopback)", dh, rg)
		stop()
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	fmt.Fprintf(out, "%-22s %10s %10s %7s %8s %9s %6s\n", "engine", "plain ms", "spec ms", "ratio", "accept", "tok/verif", "same")
	for _, r := range rows {
		fmt.Fprintf(out, "%-22s %10.2f %10.2f %7.2f %7.0f%% %9.2f %6v\n", r.Engine, r.PlainTPOT, r.SpecTPOT, r.SpecTPOT/r.PlainTPOT, 100*r.Accept, r.PerVerify, r.Same)
	}
	enc := json.NewEncoder(out)
	return enc.Encode(map[string]any{"verify_cost": costs, "rows": rows})
}

type row struct {
	Engine              string
	PlainTPOT, SpecTPOT float64 // ms per token evaluated after the prompt
	Accept              float64
	PerVerify           float64 // tokens emitted per verification pass
	Same                bool
}

// models generates the pair unless current (modelgen.Current).
func (c config) models() (target, draft string, err error) {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return "", "", err
	}
	base := modelgen.Config{Arch: "llama", Embd: c.embd, FF: c.ff, Heads: c.heads, Vocab: c.vocab, Type: c.typ, Seed: 19, Ctx: 4096}
	tc, dc := base, base
	tc.Layers, tc.QuietFrom, tc.QuietScale = c.layers, c.draftLayers, c.scale
	if c.scale == 0 {
		tc.QuietScale = 0
	}
	dc.Layers = c.draftLayers
	target = filepath.Join(c.dir, fmt.Sprintf("target-%dx%d-%s-q%d-s%g.gguf", c.layers, c.embd, c.typ, c.draftLayers, c.scale))
	draft = filepath.Join(c.dir, fmt.Sprintf("draft-%dx%d-%s.gguf", c.draftLayers, c.embd, c.typ))
	for p, mc := range map[string]modelgen.Config{target: tc, draft: dc} {
		ok, err := modelgen.Current(p, mc)
		if err != nil || !ok {
			if err := modelgen.Generate(p, mc); err != nil {
				return "", "", err
			}
		}
	}
	return target, draft, nil
}

type runFunc func(head.Request) (head.Stats, []int32, error)

// compare runs every prompt unspeculated and speculated (a warm-up first).
func (c config) compare(name string, draft *head.Head, run runFunc) (row, error) {
	r := row{Engine: name, Same: true}
	if _, _, err := run(head.Request{Prompt: "warm up", MaxTokens: 4}); err != nil {
		return r, err
	}
	var plainT, specT time.Duration
	var plainN, specN, drafted, accepted, verifs, emitted int
	for _, p := range c.prompts {
		pst, pids, err := run(head.Request{Prompt: p, MaxTokens: c.tokens})
		if err != nil {
			return r, err
		}
		sst, sids, err := run(head.Request{Prompt: p, MaxTokens: c.tokens, Draft: draft, DraftTokens: c.k})
		if err != nil {
			return r, err
		}
		r.Same = r.Same && slices.Equal(pids, sids)
		plainT, plainN = plainT+pst.DecodeTime, plainN+pst.DecodeTokens
		specT, specN = specT+sst.DecodeTime, specN+sst.DecodeTokens
		drafted, accepted, verifs, emitted = drafted+sst.Drafted, accepted+sst.Accepted, verifs+sst.Verifications, emitted+sst.DecodeTokens
	}
	r.PlainTPOT = ms(plainT) / float64(plainN)
	r.SpecTPOT = ms(specT) / float64(specN)
	if drafted > 0 {
		r.Accept = float64(accepted) / float64(drafted)
	}
	if verifs > 0 {
		r.PerVerify = float64(emitted) / float64(verifs)
	}
	return r, nil
}

// verifyCost is the median time of verifying n = 1..k+1 tokens in one pass
// of the target over that of one token, at the same position.
func verifyCost(ctx context.Context, h *head.Head, c config) ([]float64, error) {
	toks, err := h.PromptTokens(head.Request{Prompt: "Once upon a time there was a"})
	if err != nil {
		return nil, err
	}
	if _, err := h.Begin(ctx, toks, 0); err != nil {
		return nil, err
	}
	if _, err := h.Eval(ctx, toks, 0); err != nil {
		return nil, err
	}
	pos := len(toks)
	// The sizes take turns, a warm-up round first (each size's graph is
	// built once), so that the machine's noise falls on all alike.
	ts := make([][]float64, c.k+1)
	for rep := -1; rep < c.reps; rep++ {
		for n := 1; n <= c.k+1; n++ {
			batch := make([]int32, n)
			for i := range batch {
				batch[i] = toks[i%len(toks)]
			}
			start := time.Now()
			if _, err := h.EvalAll(ctx, batch, pos); err != nil {
				return nil, err
			}
			if rep >= 0 {
				ts[n-1] = append(ts[n-1], ms(time.Since(start)))
			}
			if err := h.Truncate(ctx, pos); err != nil {
				return nil, err
			}
		}
	}
	med := make([]float64, c.k+1)
	for i, t := range ts {
		sort.Float64s(t)
		med[i] = t[len(t)/2]
	}
	one := med[0]
	for i := range med {
		med[i] /= one
	}
	return med, nil
}

// ringRun starts two workers in this process and returns the run of a
// request on a ring of the head and them (the target's layers split
// evenly, k = 1, the job kept between requests).
func (c config) ringRun(ctx context.Context, target string, nCtx int) (runFunc, func(), error) {
	log := slog.New(slog.DiscardHandler)
	tmp, err := os.MkdirTemp("", "specbench")
	if err != nil {
		return nil, nil, err
	}
	var stops []func()
	stop := func() {
		for _, s := range slices.Backward(stops) {
			s()
		}
		_ = os.RemoveAll(tmp)
	}
	headDir := filepath.Join(tmp, "head")
	hid, err := identity.LoadOrCreate(headDir, time.Now(), crand.Reader)
	if err != nil {
		stop()
		return nil, nil, err
	}
	var gaps job.Gaps
	var peers []job.Peer
	var ids []deviceid.ID
	for i := range 2 {
		dir := filepath.Join(tmp, fmt.Sprintf("w%d", i))
		w, err := job.StartWorker(ctx, job.ServeParams{Identity: dir, Allowed: []deviceid.ID{hid.ID}, CacheDir: filepath.Join(tmp, fmt.Sprintf("cache%d", i)), Listen: "127.0.0.1:0", Threads: c.threads}, &gaps, nil, log)
		if err != nil {
			stop()
			return nil, nil, err
		}
		stops = append(stops, w.Stop)
		wid, err := identity.LoadOrCreate(dir, time.Now(), crand.Reader)
		if err != nil {
			stop()
			return nil, nil, err
		}
		peers, ids = append(peers, job.Peer{ID: wid.ID, Addr: w.Addr()}), append(ids, wid.ID)
	}
	m, err := job.OpenHead(target, &gaps, log)
	if err != nil {
		stop()
		return nil, nil, err
	}
	stops = append(stops, m.Close)
	a, b := c.layers/3, 2*c.layers/3
	plan := &wire.Plan{ID: 1, K: 1, Layers: c.layers, NEmbd: c.embd, Devices: []wire.Device{
		{ID: hid.ID, Windows: []wire.Range{{Start: 0, End: a}}},
		{ID: ids[0], Windows: []wire.Range{{Start: a, End: b}}},
		{ID: ids[1], Windows: []wire.Range{{Start: b, End: c.layers}}}}}
	p := job.Params{Plan: plan, Peers: peers, Identity: headDir, TickMS: 1000, KeepMS: 600_000, Threads: c.threads}
	run := func(req head.Request) (head.Stats, []int32, error) {
		r, err := m.Request(p, nCtx, hid, nil)
		if err != nil {
			return head.Stats{}, nil, err
		}
		var ids []int32
		st, err := head.Run(ctx, r, m.Vocab(), nCtx, req, func(t head.Token) error { ids = append(ids, t.ID); return nil })
		r.Finish(err)
		return st, ids, err
	}
	return run, stop, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
