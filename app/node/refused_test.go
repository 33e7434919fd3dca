package node

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"homering/engine/ring/transport"
	"homering/engine/ring/wire"
	"homering/internal/testlog"
	"homering/internal/testwait"
)

// TestRefusalsCounted: a replayed pairing exchange, a stranger replaying a
// used code and a paired device sending a ring frame on its control link
// (an activation of a plan no one installed) are each refused with a log
// line, counted in Status and printed by the doctor with the engine's
// counts, and the worker keeps answering the paired device.
func TestRefusalsCounted(t *testing.T) {
	ctx := context.Background()
	logs := &testlog.Buffer{}
	worker := testNodeLog(t, "worker", true, logs)
	head, stranger := testNode(t, "head", false), testNode(t, "stranger", false)
	addr := loopAddr(worker)
	show, err := worker.ShowCode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := head.EnterCode(ctx, addr, show.Code); err != nil {
		t.Fatal(err)
	}

	// The same exchange again: the code is used up.
	if _, err := head.EnterCode(ctx, addr, show.Code); err == nil {
		t.Fatal("a replayed pairing exchange paired again")
	}
	// A stranger with the used code is refused before any exchange.
	if _, err := stranger.EnterCode(ctx, addr, show.Code); err == nil {
		t.Fatal("a stranger paired with a used code")
	}
	// A valid ring frame for a plan that is not installed, on the control link.
	c, err := head.ep.Dial(ctx, addr, worker.o.Identity.ID, transport.PurposeLink)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	typ, p, err := wire.Encode(&wire.Activation{Plan: 7, Layers: wire.Range{Start: 0, End: 3}, Rows: 1, NEmbd: 1, DType: wire.F32, Data: make([]byte, 4)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(transport.Frame{Type: transport.MsgType(typ), Payload: p}); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(transport.Frame{Type: transport.MsgPing, Payload: []byte("still there")}); err != nil {
		t.Fatal(err)
	}
	if f, err := c.Recv(); err != nil || f.Type != transport.MsgPong {
		t.Fatalf("after the stray frame: %v %v, want a pong", f.Type, err)
	}

	// What the engine's ring links refused (engine/runner's EvRefused,
	// handed over by the agent) counts with the node's own.
	worker.CountRefusals(map[string]uint64{transport.RefusedNoPlan: 2})

	want := map[string]uint64{transport.RefusedPairReplay: 1, transport.RefusedUnpaired: 1, transport.RefusedFrameType: 1, transport.RefusedNoPlan: 2}
	testwait.For(t, 5*time.Second, "refusals counted", func() error {
		got := worker.Status().Refused
		for k, v := range want {
			if got[k] != v {
				return errors.New(transport.FormatRefusals(got))
			}
		}
		return nil
	})
	var line string
	for _, ch := range worker.Doctor().Checks {
		if ch.Name == "refused" {
			line = ch.Detail
		}
	}
	if line != "2 plan not installed, 1 pairing replayed, 1 unknown frame, 1 unpaired" {
		t.Errorf("doctor's refused line = %q", line)
	}
	for _, l := range []string{"refused a pairing attempt: no pairing code is shown", "refused connection from an unpaired device", "dropped a frame this link does not carry"} {
		if !strings.Contains(logs.String(), l) {
			t.Errorf("worker log lacks %q", l)
		}
	}
}
