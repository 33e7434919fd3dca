package driver

import (
	"context"
	"strings"
	"testing"
	"time"

	"homering/engine/ring"
	"homering/engine/ring/ggmlengine"
	"homering/engine/ring/transport"
	"homering/engine/ring/wire"
)

// A worker whose link stays open but which answers nothing (a frozen
// process) is lost after max(3 ticks, 4 × RTT) of silence.
//
// b is alive until the plan is up: it answers pings and acknowledges the
// plan, and freezes once the head commits it. Were it silent from the
// start, the head could lose it before Ready: b acknowledges at once while
// the head still opens its own windows (slow on a loaded machine), and from
// its acknowledgement on b has 3 ticks (60 ms here), not the preparing
// allowance.
func TestFrozenWorkerLostBySilence(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ma := openModel(t)
	ea := &ggmlengine.GGML{M: ma, NCtx: 16, Threads: 1}
	defer ea.Close()
	a := New(ring.New(tid("a"), 20), ea, 20*time.Millisecond, logger(t).With("device", "a"))
	client, frozen := link(t, "a", "b")
	a.AddConn(ctx, tid("b"), client)
	froze := make(chan time.Time, 1)
	go func() {
		up := true
		for {
			f, err := frozen.Recv()
			if err != nil {
				return
			}
			if !up {
				continue // frozen: swallows everything
			}
			if f.Type == transport.MsgPing {
				_ = frozen.Send(transport.Frame{Type: transport.MsgPong, Payload: f.Payload})
				continue
			}
			m, err := wire.Decode(wire.Type(f.Type), f.Payload)
			if err != nil {
				continue
			}
			switch m := m.(type) {
			case *wire.Plan:
				typ, b, _ := wire.Encode(&wire.PlanAck{Plan: m.ID})
				_ = frozen.Send(transport.Frame{Type: transport.MsgType(typ), Payload: b})
			case *wire.Commit:
				up = false
				froze <- time.Now()
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	plan := &wire.Plan{ID: 1, K: 1, Layers: ma.Info().NLayer, NEmbd: ma.Info().NEmbd, DType: wire.F32, Devices: []wire.Device{
		{ID: tid("a"), Windows: []wire.Range{rg(0, 2)}}, {ID: tid("b"), Windows: []wire.Range{rg(2, 5)}}}}
	if err := a.Post(ctx, ring.PlanInstalled{Plan: plan}); err != nil {
		t.Fatal(err)
	}
	await[ring.Ready](t, a)
	r := await[ring.Replan](t, a)
	if !strings.Contains(r.Reason, "silent") || len(r.Without) != 1 || r.Without[0] != tid("b") {
		t.Errorf("Replan = %+v, want b lost by silence", r)
	}
	t.Logf("frozen worker lost %v after it froze", time.Since(<-froze))
	cancel()
	if err := <-done; err != nil {
		t.Logf("the driver ended: %v", err)
	}
}
