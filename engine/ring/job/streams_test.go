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

// Several requests at once on one ring (issue 19 item 3): a head and two
// workers in this process (loopback, mutual TLS), an 8-layer generated
// model over the three. 2 and then 4 greedy requests started together run
// as streams of one job, overlapping (every request has its first token
// before any has its last), and each reply is the single device's reply
// to its prompt alone, token for token.
func TestConcurrentRequestsThroughThreeDevices(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(testlog.Writer(t), &slog.HandlerOptions{Level: slog.LevelWarn}))
	headDir := t.TempDir()
	hid, err := identity.LoadOrCreate(headDir, time.Now(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var gaps Gaps
	var peers []Peer
	var ids []deviceid.ID
	for range 2 {
		dir := t.TempDir()
		w, err := StartWorker(ctx, ServeParams{Identity: dir, Allowed: []deviceid.ID{hid.ID}, CacheDir: t.TempDir(), Listen: "127.0.0.1:0", Threads: 1}, &gaps, nil, log)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		wid, err := identity.LoadOrCreate(dir, time.Now(), crand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		peers, ids = append(peers, Peer{ID: wid.ID, Addr: w.Addr()}), append(ids, wid.ID)
	}
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
		if err := single.Generate(ctx, head.Request{Prompt: p, MaxTokens: maxTokens}, func(tk head.Token) error { ids = append(ids, tk.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		want = append(want, ids)
	}

	m, err := OpenHead(path, &gaps, log)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	info := m.model.Info()
	plan := &wire.Plan{ID: 1, K: 1, Layers: info.NLayer, NEmbd: info.NEmbd, Devices: []wire.Device{
		{ID: hid.ID, Windows: []wire.Range{{Start: 0, End: 3}}},
		{ID: ids[0], Windows: []wire.Range{{Start: 3, End: 6}}},
		{ID: ids[1], Windows: []wire.Range{{Start: 6, End: info.NLayer}}}}}
	p := Params{Plan: plan, Peers: peers, Identity: headDir, TickMS: 1000, KeepMS: 60_000, Threads: 1}
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d at once", n), func(t *testing.T) {
			got := make([][]int32, n)
			first, last := make([]time.Time, n), make([]time.Time, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := m.Request(p, 256, hid, nil)
					if err != nil {
						errs[i] = err
						return
					}
					_, err = head.Run(ctx, r, m.Vocab(), 256, head.Request{Prompt: prompts[i], MaxTokens: maxTokens},
						func(tk head.Token) error {
							if got[i] = append(got[i], tk.ID); len(got[i]) == 1 {
								first[i] = time.Now()
							}
							last[i] = time.Now()
							return nil
						})
					r.Finish(err)
					errs[i] = err
				}()
			}
			wg.Wait()
			for i := range n {
				if errs[i] != nil {
					t.Fatalf("request %d: %v", i, errs[i])
				}
				if !slices.Equal(got[i], want[i]) {
					t.Errorf("prompt %q with %d at once: ring reply %v, single device alone %v", prompts[i], n, got[i], want[i])
				}
			}
			if lastFirst, firstLast := slices.MaxFunc(first, time.Time.Compare), slices.MinFunc(last, time.Time.Compare); !lastFirst.Before(firstLast) {
				t.Errorf("the requests did not overlap: the last first token at %v, the first last token at %v", lastFirst.Format("15:04:05.000"), firstLast.Format("15:04:05.000"))
			}
		})
	}
}
