package driver

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"
	"time"

	"homering/engine/ring"
	"homering/engine/ring/transport"
)

// A burst of pings read at once gets the pongs that fit in the link's
// queue, and the link stays up. A worker reads the link it dialled to its
// successor only once its windows are open, while the successor pings it
// every tick from the start: after a slice fetch of tens of seconds under
// load the worker read ~80 pings at once, the pongs overflowed the queue,
// the link closed as a peer not reading its frames, and the head lost the
// idle successor as stalled (bench/ring.sh's loaded row).
func TestPingBurstKeepsLink(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := New(ring.New(tid("a"), int(handTick/time.Millisecond)), idleEngine{}, handTick, logger(t))
	near, far := link(t, "a", "b")
	d.AddConn(ctx, tid("b"), near)
	ping := func(stamp uint64) transport.Frame {
		return transport.Frame{Type: transport.MsgPing, Payload: append(binary.BigEndian.AppendUint64(nil, stamp), workAsk...)}
	}
	// b's pings, unread by b's side's reader in the meantime (the pipe
	// holds each pong until it is read): 100 of them against a queue of 16.
	const burst = 100
	for i := range burst {
		if err := far.Send(ping(uint64(i))); err != nil {
			t.Fatalf("ping %d of the burst: %v (the link closed)", i, err)
		}
	}
	// Now b reads: the pongs the queue held, then the answer to a fresh
	// ping, sent until it comes (the queue drains first).
	const fresh = 1 << 40
	pongs := make(chan transport.Frame, 1)
	errc := make(chan error, 1)
	go func() {
		for {
			f, err := far.Recv()
			if err != nil {
				errc <- err
				return
			}
			pongs <- f
		}
	}()
	got := 0
	tk := time.NewTicker(20 * time.Millisecond)
	defer tk.Stop()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case f := <-pongs:
			if f.Type != transport.MsgPong || len(f.Payload) != pingLen+8 {
				t.Fatalf("frame %d after the burst: type %d, %d bytes; want a pong of %d", got, f.Type, len(f.Payload), pingLen+8)
			}
			if bytes.Equal(f.Payload[:pingLen], ping(fresh).Payload) {
				if !d.HasLink(tid("b")) {
					t.Fatal("the link to b is gone after the burst")
				}
				if n := len(d.in); n > 0 {
					t.Fatalf("%d events posted after the burst (%v), want none: the link is fine", n, <-d.in)
				}
				t.Logf("a burst of %d pings got %d pongs, and the link answers the next", burst, got)
				return
			}
			got++
		case <-tk.C:
			if err := far.Send(ping(fresh)); err != nil {
				t.Fatalf("a ping after the burst: %v (the link closed after %d pongs)", err, got)
			}
		case err := <-errc:
			t.Fatalf("the link closed after a burst of %d pings and %d pongs: %v", burst, got, err)
		case <-deadline:
			t.Fatalf("no answer to a ping within 10 s of a burst (%d pongs read)", got)
		}
	}
}
