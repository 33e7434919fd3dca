package node

import (
	"context"
	"testing"
)

// A device added by address is planned into rings only when it is known to
// contribute. mDNS says so in its TXT record; for an address (the Windows
// worker under Wine in build/wine-ring.sh, a device on another subnet) the
// witness is the ring link it answers once paired, which it serves only
// while contributing.
func TestManualPeerContributes(t *testing.T) {
	ctx := context.Background()
	worker, head := testNode(t, "worker", true), testNode(t, "head", false)
	addr := loopAddr(worker)

	p, err := head.AddPeer(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	if p.Paired || p.Contribute {
		t.Fatalf("unpaired manual add: %+v, want neither paired nor known to contribute (its link is refused)", p)
	}
	show, err := worker.ShowCode()
	if err != nil {
		t.Fatal(err)
	}
	// Pairing looks at a device added by address again: as a person does it
	// (add, then pair), it is ready for a ring without another add.
	p, err = head.EnterCode(ctx, addr, show.Code)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Paired || !p.Visible || !p.Contribute || p.Name != "worker" {
		t.Errorf("after pairing: %+v, want paired, visible, contributing, named worker", p)
	}
	p, err = head.AddPeer(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Paired || !p.Visible || !p.Contribute || p.Name != "worker" {
		t.Errorf("paired manual add: %+v, want paired, visible, contributing, named worker", p)
	}
}

// Pairing with a device that was not added by address (found by mDNS, or
// paired by an address typed into pair alone) saves no manual address.
func TestPairingAddsNoManualAddress(t *testing.T) {
	ctx := context.Background()
	worker, head := testNode(t, "worker", true), testNode(t, "head", false)
	show, err := worker.ShowCode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := head.EnterCode(ctx, loopAddr(worker), show.Code); err != nil {
		t.Fatal(err)
	}
	head.mu.Lock()
	manual := head.cfg.ManualPeers
	head.mu.Unlock()
	if len(manual) != 0 {
		t.Errorf("pairing by address saved manual peers %v; only peers add does", manual)
	}
}
