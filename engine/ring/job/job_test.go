package job

import (
	"context"
	crand "crypto/rand"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"homering/discovery/deviceid"
	"homering/discovery/identity"
	"homering/engine/head"
	"homering/engine/ring/wire"
	"homering/engine/sample"
	"homering/internal/testlog"
)

// smallModel is a generated llama (4 layers, quantized: its logits do not
// depend on the batch size, so a window split anywhere stays exact).
const smallModel = "../../../testdata/models/llama-Q8_0.gguf"

// A head and a worker in this process, on loopback with real mutual TLS
// (engine/runner's tests run them as separate children): the ring's reply
// is the single device's, token for token, the Result names both devices,
// and a second request with the same parameters runs on the kept job (no
// dial, the prompt's full passes cached).
func TestHeadAndWorkerInProcess(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(testlog.Writer(t), &slog.HandlerOptions{Level: slog.LevelInfo}))
	headDir, workerDir := t.TempDir(), t.TempDir()
	hid, err := identity.LoadOrCreate(headDir, time.Now(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var gaps Gaps
	w, err := StartWorker(ctx, ServeParams{Identity: workerDir, Allowed: []deviceid.ID{hid.ID}, CacheDir: t.TempDir(), Listen: "127.0.0.1:0", Threads: 1}, &gaps, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	wid, err := identity.LoadOrCreate(workerDir, time.Now(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}

	req := head.Request{Prompt: "Once upon a time", MaxTokens: 8, Sampling: sample.Defaults()}
	req.Sampling.Temperature = 0
	single, err := head.Open(head.Config{ModelPath: smallModel, NCtx: 256, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	var want []int32
	err = single.Generate(ctx, req, func(tk head.Token) error { want = append(want, tk.ID); return nil })
	_ = single.Close()
	if err != nil || len(want) == 0 {
		t.Fatalf("single device: %v, %d tokens", err, len(want))
	}

	m, err := OpenHead(smallModel, &gaps, log)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	layers := m.model.Info().NLayer
	plan := &wire.Plan{ID: 1, K: 1, Layers: layers, NEmbd: m.model.Info().NEmbd, Devices: []wire.Device{
		{ID: hid.ID, Windows: []wire.Range{{Start: 0, End: 2}}}, {ID: wid.ID, Windows: []wire.Range{{Start: 2, End: layers}}}}}
	p := Params{Plan: plan, Peers: []Peer{{ID: wid.ID, Addr: w.Addr()}}, Identity: headDir, TickMS: 1000, KeepMS: 60_000, Threads: 1}
	var (
		mu       sync.Mutex // the slice servers report from their goroutines
		progress []Progress
	)
	run := func() ([]int32, head.Stats, Result) {
		t.Helper()
		mu.Lock()
		progress = nil
		mu.Unlock()
		r, err := m.Request(p, 256, hid, func(pr Progress) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, pr)
		})
		if err != nil {
			t.Fatal(err)
		}
		var got []int32
		st, err := head.Run(ctx, r, m.Vocab(), 256, req, func(tk head.Token) error { got = append(got, tk.ID); return nil })
		res := r.Finish(err)
		if err != nil {
			t.Fatal(err)
		}
		return got, st, res
	}
	got, _, res := run()
	if !slices.Equal(got, want) {
		t.Errorf("ring reply %v, single device %v", got, want)
	}
	if len(res.Devices) != 2 || res.Devices[1].ID != wid.ID || !slices.Equal(res.Devices[1].Windows, plan.Devices[1].Windows) || res.PlanID != 1 {
		t.Errorf("result devices %+v, plan %d; want the head and the worker of plan 1", res.Devices, res.PlanID)
	}
	if res.Trace == nil || res.Trace.DialMS <= 0 || res.Passes == 0 {
		t.Errorf("a fresh job's trace %+v, passes %d: want its dial time and passes", res.Trace, res.Passes)
	}
	mu.Lock()
	if n := len(progress); n == 0 || progress[n-1].Device != wid.ID || progress[n-1].Total == 0 || progress[n-1].Done != progress[n-1].Total {
		t.Errorf("slice progress %+v: want the worker's, ending at its total", progress)
	}
	mu.Unlock()

	got, st, res := run()
	if !slices.Equal(got, want) {
		t.Errorf("ring reply on the kept job %v, single device %v", got, want)
	}
	if res.Trace == nil || res.Trace.DialMS != 0 {
		t.Errorf("the kept job's trace %+v: want no dial", res.Trace)
	}
	if st.PromptTokens == 0 || st.CachedTokens >= st.PromptTokens {
		t.Errorf("kept job: %d of %d prompt tokens cached, want fewer than all (the last pass runs for its logits)", st.CachedTokens, st.PromptTokens)
	}
}
