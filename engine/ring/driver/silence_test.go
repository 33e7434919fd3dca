package driver

import (
	"context"
	"strings"
	"testing"
	"time"

	"homering/engine/ring"
	"homering/engine/ring/transport"
	"homering/engine/ring/wire"
)

// A worker whose link stays open but which answers nothing (a frozen
// process) is lost after max(3 ticks, 4 × RTT) of silence.
func TestFrozenWorkerLostBySilence(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ma := openModel(t)
	ea := &GGML{M: ma, NCtx: 16, Threads: 1}
	defer ea.Close()
	a := New(ring.New("a", 20), ea, 20*time.Millisecond, logger(t).With("device", "a"))
	client, frozen := link(t, "a", "b")
	a.AddConn(ctx, "b", client)
	// b acknowledges the plan, then swallows everything without answering.
	go func() {
		for {
			f, err := frozen.Recv()
			if err != nil {
				return
			}
			if m, err := wire.Decode(wire.Type(f.Type), f.Payload); err == nil {
				if p, ok := m.(*wire.Plan); ok {
					typ, b, _ := wire.Encode(&wire.PlanAck{Plan: p.ID})
					_ = frozen.Send(transport.Frame{Type: transport.MsgType(typ), Payload: b})
				}
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	plan := &wire.Plan{ID: 1, K: 1, Layers: ma.Info().NLayer, NEmbd: ma.Info().NEmbd, DType: wire.F32, Devices: []wire.Device{
		{ID: "a", Windows: []wire.Range{rg(0, 2)}}, {ID: "b", Windows: []wire.Range{rg(2, 5)}}}}
	start := time.Now()
	if err := a.Post(ctx, ring.PlanInstalled{Plan: plan}); err != nil {
		t.Fatal(err)
	}
	await[ring.Ready](t, a)
	r := await[ring.Replan](t, a)
	if !strings.Contains(r.Reason, "silent") || len(r.Without) != 1 || r.Without[0] != "b" {
		t.Errorf("Replan = %+v, want b lost by silence", r)
	}
	t.Logf("frozen worker lost after %v", time.Since(start))
	cancel()
	<-done
}
