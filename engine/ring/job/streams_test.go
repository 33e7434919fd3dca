package job

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"homering/discovery/deviceid"
	"homering/discovery/identity"
	"homering/engine/head"
	"homering/engine/modelgen"
	"homering/engine/ring/wire"
	"homering/internal/testlog"
)

// threeDevices is a head and two workers in this process (loopback, mutual
// TLS) with the windows of the model at path spread over the three, the
// job kept between requests.
type threeDevices struct {
	m       *Head
	p       Params
	hid     *identity.Identity
	workers []*Worker
}

func newThreeDevices(tb testing.TB, path string) threeDevices {
	tb.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(testlog.Writer(tb), &slog.HandlerOptions{Level: slog.LevelWarn}))
	headDir := tb.TempDir()
	hid, err := identity.LoadOrCreate(headDir, time.Now(), crand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	var gaps Gaps
	var peers []Peer
	var ids []deviceid.ID
	var workers []*Worker
	for range 2 {
		dir := tb.TempDir()
		w, err := StartWorker(ctx, ServeParams{Identity: dir, Allowed: []deviceid.ID{hid.ID}, CacheDir: tb.TempDir(), Listen: "127.0.0.1:0", Threads: 1}, &gaps, nil, log)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(w.Stop)
		workers = append(workers, w)
		wid, err := identity.LoadOrCreate(dir, time.Now(), crand.Reader)
		if err != nil {
			tb.Fatal(err)
		}
		peers, ids = append(peers, Peer{ID: wid.ID, Addr: w.Addr()}), append(ids, wid.ID)
	}
	m, err := OpenHead(path, &gaps, log)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(m.Close)
	L := m.model.Info().NLayer
	plan := &wire.Plan{ID: 1, K: 1, Layers: L, NEmbd: m.model.Info().NEmbd, Devices: []wire.Device{
		{ID: hid.ID, Windows: []wire.Range{{Start: 0, End: L / 3}}},
		{ID: ids[0], Windows: []wire.Range{{Start: L / 3, End: 2 * L / 3}}},
		{ID: ids[1], Windows: []wire.Range{{Start: 2 * L / 3, End: L}}}}}
	return threeDevices{m: m, hid: hid, workers: workers, p: Params{Plan: plan, Peers: peers, Identity: headDir, TickMS: 1000, KeepMS: 60_000, Threads: 1}}
}

// openStreams is how many streams' windows (KV caches) the kept job holds
// open on each device, the head first.
func (d threeDevices) openStreams(tb testing.TB) []int {
	tb.Helper()
	d.m.mu.Lock()
	h := d.m.kept
	d.m.mu.Unlock()
	if h == nil {
		tb.Fatal("no kept job on the head")
	}
	out := []int{h.eng.Streams()}
	for _, w := range d.workers {
		w.mu.Lock()
		j := w.job
		w.mu.Unlock()
		if j == nil {
			tb.Fatal("no job on a worker")
		}
		out = append(out, j.eng.g.Streams())
	}
	return out
}

// concurrently runs one greedy request per prompt at once and returns each
// reply and when its first and last tokens came.
func (d threeDevices) concurrently(tb testing.TB, prompts []string, maxTokens int) (got [][]int32, first, last []time.Time) {
	tb.Helper()
	n := len(prompts)
	got, first, last = make([][]int32, n), make([]time.Time, n), make([]time.Time, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := d.m.Request(d.p, 256, d.hid, nil)
			if err != nil {
				errs[i] = err
				return
			}
			_, err = head.Run(context.Background(), r, d.m.Vocab(), 256, head.Request{Prompt: prompts[i], MaxTokens: maxTokens},
				func(tk head.Token) error {
					if got[i] = append(got[i], tk.ID); len(got[i]) == 1 {
						first[i] = time.Now()
					}
					last[i] = time.Now()
					return nil
				})
			r.Finish(err)
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			tb.Fatalf("request %d: %v", i, err)
		}
	}
	return got, first, last
}

// Several requests at once on one ring (issue 19 item 3), three devices in
// this process, an 8-layer generated model: 2 and then 4 greedy requests
// started together run as streams of one job, overlapping (every request
// has its first token before any has its last), and each reply is the
// single device's reply to its prompt alone, token for token.
func TestConcurrentRequestsThroughThreeDevices(t *testing.T) {
	path := filepath.Join(t.TempDir(), "target.gguf")
	if err := modelgen.Generate(path, modelgen.Config{Arch: "llama", Layers: 8, Embd: 256, FF: 768, Heads: 4, Vocab: 2000, Type: "Q8_0", Seed: 23}); err != nil {
		t.Fatal(err)
	}
	prompts := []string{"Once upon a time", "The dog ran to the big red ball", "She said", "Tom and Sue went to the park"}
	const maxTokens = 24
	single, err := head.Open(head.Config{ModelPath: path, NCtx: 256, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	var want [][]int32
	for _, p := range prompts {
		var ids []int32
		if err := single.Generate(context.Background(), head.Request{Prompt: p, MaxTokens: maxTokens}, func(tk head.Token) error { ids = append(ids, tk.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		want = append(want, ids)
	}
	d := newThreeDevices(t, path)
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d at once", n), func(t *testing.T) {
			got, first, last := d.concurrently(t, prompts[:n], maxTokens)
			for i := range n {
				if !slices.Equal(got[i], want[i]) {
					t.Errorf("prompt %q with %d at once: ring reply %v, single device alone %v", prompts[i], n, got[i], want[i])
				}
			}
			if lastFirst, firstLast := slices.MaxFunc(first, time.Time.Compare), slices.MinFunc(last, time.Time.Compare); !lastFirst.Before(firstLast) {
				t.Errorf("the requests did not overlap: the last first token at %v, the first last token at %v", lastFirst.Format("15:04:05.000"), firstLast.Format("15:04:05.000"))
			}
			if n := overlap(first, last); n != len(first) {
				t.Errorf("at most %d of %d requests streamed at once, want all", n, len(first))
			}
		})
	}
	if got := d.openStreams(t); !slices.Equal(got, []int{4, 4, 4}) {
		t.Errorf("streams open on head, worker, worker after 4 at once: %v, want 4 each", got)
	}
	// A plan that admits 2 streams (Params.Streams, halda.Plan.Streams),
	// on devices that ran none yet: of 4 requests at once 2 run and 2
	// wait in turn, each beginning when one leaves, every reply is still
	// its reply alone, and every device holds 2 streams' KV caches.
	t.Run("4 at once, 2 admitted", func(t *testing.T) {
		two := newThreeDevices(t, path)
		two.p.Streams = 2
		got, first, last := two.concurrently(t, prompts, maxTokens)
		for i := range prompts {
			if !slices.Equal(got[i], want[i]) {
				t.Errorf("prompt %q, 4 at once with 2 admitted: ring reply %v, single device alone %v", prompts[i], got[i], want[i])
			}
		}
		if n := overlap(first, last); n != 2 {
			t.Errorf("%d requests streamed at once (first to last token), want the 2 the plan admits", n)
		}
		if got := two.openStreams(t); !slices.Equal(got, []int{2, 2, 2}) {
			t.Errorf("streams open on head, worker, worker: %v, want the 2 admitted each", got)
		}
	})
}

// overlap is the most of the intervals [first[i], last[i]] that share an
// instant.
func overlap(first, last []time.Time) int {
	most := 0
	for i := range first {
		n := 0
		for j := range first {
			if !first[j].After(first[i]) && !last[j].Before(first[i]) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// BenchmarkConcurrentStreams is the aggregate decode speed of 1, 2 and 4
// greedy requests at once through three devices in this process (1 thread
// each, loopback links; a generated 12-layer model, n_embd 1024, Q8_0):
// tokens of every reply over the wall time from the start to the last
// reply's end, prompts included, and its ratio to one request. One stream
// keeps one device busy at a time; n streams keep up to min(n, 3) busy, so
// the gain is bounded by the devices and, here, by this machine's cores.
// The last row is 4 requests on a plan that admits 2 (Params.Streams):
// two wait in turn.
func BenchmarkConcurrentStreams(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.gguf")
	if err := modelgen.Generate(path, modelgen.Config{Arch: "llama", Layers: 12, Embd: 1024, FF: 2816, Heads: 8, KVHeads: 2, Vocab: 8000, Type: "Q8_0", Seed: 5}); err != nil {
		b.Fatal(err)
	}
	d := newThreeDevices(b, path)
	prompts := []string{"Once upon a time", "The dog ran", "She said", "Tom and Sue went"}
	const maxTokens = 32
	d.concurrently(b, prompts[:1], 2) // ship the slices, open the windows
	var one float64
	for _, c := range []struct{ n, admit int }{{1, 0}, {2, 0}, {4, 0}, {4, 2}} {
		n := c.n
		name := fmt.Sprintf("streams=%d", n)
		if c.admit > 0 {
			name += fmt.Sprintf("/admitted=%d", c.admit) // the rest wait in turn
		}
		b.Run(name, func(b *testing.B) {
			var tps float64
			da := d
			da.p.Streams = c.admit
			for b.Loop() {
				start := time.Now()
				got, _, _ := da.concurrently(b, prompts[:n], maxTokens)
				toks := 0
				for _, g := range got {
					toks += len(g)
				}
				tps = float64(toks) / time.Since(start).Seconds()
			}
			if n == 1 {
				one = tps
			}
			b.ReportMetric(tps, "tok/s")
			if one > 0 {
				b.ReportMetric(tps/one, "x_one")
			}
		})
	}
}
