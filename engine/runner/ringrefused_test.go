// Not built for Windows: runner_test.go's helpers are not.

//go:build !windows

package runner

import (
	"context"
	crand "crypto/rand"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/discovery/identity"
	"homering/engine/ring/transport"
	"homering/engine/ring/wire"
)

// A paired device that sends valid ring frames of a plan the worker never
// installed (issue 21 item 5), over real mutual TLS to a real worker
// child: as the first frame of a link (refused, link closed) and inside a
// job it started (dropped, link kept: it still answers pings). Each is
// counted once and reaches the parent (EvRefused → Options.OnRefused); the
// worker then serves a real head's ring request, with the single
// device's reply.
func TestRingFramesOfNoPlanRefused(t *testing.T) {
	var mu sync.Mutex
	got := map[string]uint64{}
	o := supervisorOptions(t)
	o.OnRefused = func(m map[string]uint64) {
		mu.Lock()
		defer mu.Unlock()
		for k, v := range m {
			got[k] += v
		}
	}
	w, head := newDeviceWith(t, o), newDevice(t)
	liarDir := t.TempDir()
	liar, err := identity.LoadOrCreate(liarDir, time.Now(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serveRing(t, w, head, &device{did: liar.ID})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ep := transport.New(transport.Config{
		Identity: liar,
		Hello: func() transport.Hello {
			return transport.Hello{ProtoMin: transport.ProtoMin, ProtoMax: transport.ProtoMax, Purpose: transport.PurposeLink, App: "liar"}
		},
		Authorize: func(identity.DeviceID) transport.Decision { return transport.Refuse },
		Log:       testLogger(t),
	})
	send := func(c *transport.Conn, m wire.Msg) {
		t.Helper()
		typ, p, err := wire.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Send(transport.Frame{Type: transport.MsgType(typ), Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	act := &wire.Activation{Plan: 9, Layers: wire.Range{Start: 0, End: 1}, Rows: 1, NEmbd: 2, DType: wire.F32, Data: make([]byte, 8)}

	// An activation as a link's first frame: no job, refused.
	c1, err := ep.Dial(ctx, w.addr, w.did, transport.PurposeLink)
	if err != nil {
		t.Fatal(err)
	}
	send(c1, act)
	if f, err := c1.Recv(); err == nil {
		t.Errorf("the worker answered an activation before any job with frame type %d; want the link closed", f.Type)
	}
	_ = c1.Close()

	// A job, then activations of a plan never installed: dropped, the
	// link kept.
	c2, err := ep.Dial(ctx, w.addr, w.did, transport.PurposeLink)
	if err != nil {
		t.Fatal(err)
	}
	send(c2, &wire.JobStart{Job: 77, NCtx: 256, TickMS: 1000})
	f, err := c2.Recv()
	if err != nil {
		t.Fatalf("job start: %v", err)
	}
	m, err := wire.Decode(wire.Type(f.Type), f.Payload)
	if ack, ok := m.(*wire.JobAck); err != nil || !ok || ack.Code != wire.CodeOK {
		t.Fatalf("job start answered %v (%v), want an OK JobAck", m, err)
	}
	send(c2, act)
	send(c2, act)
	if _, err := transport.Pings(c2, 3, []byte{1, 2, 3, 4, 5, 6, 7, 8}, time.Now); err != nil {
		t.Errorf("pings after the frames of no plan: %v; want the link kept", err)
	}
	_ = c2.Close() // ends the job: the worker is free for the head

	want := map[string]uint64{transport.RefusedNoPlan: 3}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		now := maps.Clone(got)
		mu.Unlock()
		if cmp.Equal(want, now) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("refusals the parent heard: %v, want %v", now, want)
		}
		time.Sleep(50 * time.Millisecond) // the child reports once a second
	}

	lp := LoadParams{Model: stories260K, NCtx: 256, Threads: 1}
	g := *greedy(8)
	g.Prompt = "Once upon a time"
	wantToks := reference(t, head.sup, lp, g)
	layers, nEmbd := modelShape(t, stories260K)
	toks, st, err := ringTokens(t, head, lp, ringParams(evenPlan(1, layers, nEmbd, 1, head, w), head, w), g, nil)
	if err != nil {
		t.Fatalf("the ring after the refused frames: %v", err)
	}
	if diff := cmp.Diff(wantToks, toks); diff != "" || st.Replans != 0 {
		t.Errorf("the ring after the refused frames: %d re-plans, reply (-single +ring)\n%s", st.Replans, diff)
	}
}
