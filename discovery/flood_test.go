package discovery

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"homering/discovery/identity"
)

// A flood of mDNS announcements (IDs, runs or addresses invented by a
// stranger on the network) keeps the table within its bounds, keeps the
// devices that live (seen again) and the ones added by hand, still admits
// a real newcomer, and is counted.
func TestTableFlood(t *testing.T) {
	tb := NewTable(self, "me")
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) }
	tb.Observe(mdns(rec(devA, "a", "r1"), "eth0", addr1), at(0))
	tb.Observe(mdns(rec(devA, "a", "r1"), "eth0", addr1), at(1)) // a lives
	manual := Sighting{Record: rec(devB, "b", ""), Source: SourceManual, Addrs: []netip.AddrPort{addr2}}
	tb.Observe(manual, at(2))

	const n = 1000
	for i := 0; i < n; i++ {
		id := identity.IDFromCert([]byte(fmt.Sprintf("flood-%d", i)))
		tb.Observe(mdns(rec(id, fmt.Sprintf("f%d", i), "x"), "eth0", addr1), at(10+i))
	}
	if got := len(tb.Peers()); got != MaxPeers {
		t.Errorf("after %d invented devices the table holds %d, want the bound %d", n, got, MaxPeers)
	}
	for _, id := range []identity.DeviceID{devA, devB} {
		if _, ok := tb.Get(id); !ok {
			t.Errorf("%v was pushed out by the flood", id)
		}
	}
	if want := uint64(n - (MaxPeers - 2)); tb.Flooded() != want {
		t.Errorf("Flooded = %d, want %d (one per invented device pushed out)", tb.Flooded(), want)
	}
	// The oldest invented devices went first: the newest are there.
	last := identity.IDFromCert([]byte(fmt.Sprintf("flood-%d", n-1)))
	first := identity.IDFromCert([]byte("flood-0"))
	if _, ok := tb.Get(last); !ok {
		t.Error("the newest announcement is missing")
	}
	if _, ok := tb.Get(first); ok {
		t.Error("the oldest one-off announcement stayed")
	}
	// A real device joining during the flood gets in.
	c := identity.IDFromCert([]byte("c"))
	evs := tb.Observe(mdns(rec(c, "c", "r1"), "eth0", addr1), at(2000))
	if _, ok := tb.Get(c); !ok || len(evs) != 2 || evs[0].Kind != Left || evs[1].Kind != Joined {
		t.Errorf("a newcomer during the flood: present %v, events %v", ok, evs)
	}
}

// When every device in a full table lives, a new one-off announcement is
// what goes, and nothing else changes.
func TestTableFullOfLiveDevices(t *testing.T) {
	tb := NewTable(self, "me")
	for i := 0; i < MaxPeers; i++ {
		id := identity.IDFromCert([]byte(fmt.Sprintf("live-%d", i)))
		tb.Observe(mdns(rec(id, "l", "r"), "eth0", addr1), t0)
		tb.Observe(mdns(rec(id, "l", "r"), "eth0", addr1), t0.Add(time.Second))
	}
	x := identity.IDFromCert([]byte("stranger"))
	if evs := tb.Observe(mdns(rec(x, "x", "r"), "eth0", addr1), t0.Add(2*time.Second)); evs != nil {
		t.Errorf("events %v, want none", evs)
	}
	if _, ok := tb.Get(x); ok || len(tb.Peers()) != MaxPeers || tb.Flooded() != 1 {
		t.Errorf("stranger present %v, %d peers, Flooded %d; want absent, %d, 1", ok, len(tb.Peers()), tb.Flooded(), MaxPeers)
	}
}

// Invented runs of one device, or of this device's own ID, and invented
// addresses stay within their bounds; a run that lives is kept.
func TestTableRunAndAddressFlood(t *testing.T) {
	tb := NewTable(self, "me")
	tb.Observe(mdns(rec(devA, "a", "live"), "eth0", addr1), t0)
	tb.Observe(mdns(rec(devA, "a", "live"), "eth0", addr1), t0.Add(time.Millisecond))
	for i := 0; i < 100; i++ {
		at := t0.Add(time.Duration(10+i) * time.Millisecond)
		tb.Observe(mdns(rec(devA, "a", fmt.Sprintf("run-%d", i)), "eth0", addr1), at)
		tb.Observe(mdns(rec(self, "me", fmt.Sprintf("clone-%d", i)), "eth0", addr1), at)
		ap := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(i), 1}), 47470)
		tb.Observe(mdns(rec(devB, "b", "r1"), "eth0", ap), at)
	}
	a, _ := tb.Get(devA)
	if a.Runs > MaxRuns {
		t.Errorf("device a holds %d runs, want at most %d", a.Runs, MaxRuns)
	}
	if len(tb.peers[devA].inst) > MaxRuns || tb.peers[devA].inst[instKey{SourceMDNS, "live"}] == nil {
		t.Errorf("a's runs: %d, the live one kept: %v", len(tb.peers[devA].inst), tb.peers[devA].inst[instKey{SourceMDNS, "live"}] != nil)
	}
	if len(tb.clones) > MaxRuns {
		t.Errorf("%d runs of this device's own ID held, want at most %d", len(tb.clones), MaxRuns)
	}
	b, _ := tb.Get(devB)
	if len(b.Addrs) > MaxAddrs || len(b.Addrs) == 0 {
		t.Errorf("device b holds %d addresses, want 1-%d", len(b.Addrs), MaxAddrs)
	}
	if tb.Flooded() == 0 {
		t.Error("the flood was not counted")
	}
}
