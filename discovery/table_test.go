package discovery

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/discovery/identity"
)

var (
	t0    = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	self  = identity.IDFromCert([]byte("self"))
	devA  = identity.IDFromCert([]byte("a"))
	devB  = identity.IDFromCert([]byte("b"))
	addr1 = netip.MustParseAddrPort("10.0.0.1:47470")
	addr2 = netip.MustParseAddrPort("10.0.1.1:47470")
)

func rec(id identity.DeviceID, name, run string) Record {
	return Record{Version: 1, ID: id, Name: name, App: "0.1.0", ProtoMin: 1, ProtoMax: 1, Contribute: true, Port: 47470, Run: run}
}

func mdns(r Record, iface string, a netip.AddrPort) Sighting {
	return Sighting{Record: r, Source: SourceMDNS, Iface: iface, Addrs: []netip.AddrPort{a}, TTL: 6 * time.Second}
}

// step is one call on the table; want lists the events as "kind name" strings.
type step struct {
	at      time.Duration
	observe *Sighting
	goodbye *Record
	expire  bool
	remove  identity.DeviceID
	want    []string
}

func ptr[T any](v T) *T { return &v }

func TestTable(t *testing.T) {
	tests := []struct {
		name      string
		steps     []step
		wantPeers []string // "name sources ifaces addrs conflict"
	}{
		{
			name: "one device on two interfaces is one peer",
			steps: []step{
				{observe: ptr(mdns(rec(devA, "a", "r1"), "eth0", addr1)), want: []string{"joined a"}},
				{at: time.Second, observe: ptr(mdns(rec(devA, "a", "r1"), "wlan0", addr2)), want: []string{"updated a"}},
				{at: 2 * time.Second, observe: ptr(mdns(rec(devA, "a", "r1"), "wlan0", addr2))},
			},
			wantPeers: []string{"a [mdns] [wlan0] [10.0.0.1:47470 10.0.1.1:47470] false"},
		},
		{
			name: "a changed record is an update",
			steps: []step{
				{observe: ptr(mdns(rec(devA, "a", "r1"), "eth0", addr1)), want: []string{"joined a"}},
				{at: time.Second, observe: ptr(mdns(rec(devA, "kitchen", "r1"), "eth0", addr1)), want: []string{"updated kitchen"}},
			},
			wantPeers: []string{"kitchen [mdns] [eth0] [10.0.0.1:47470] false"},
		},
		{
			name: "silent device expires exactly at its TTL",
			steps: []step{
				{observe: ptr(mdns(rec(devA, "a", "r1"), "eth0", addr1)), want: []string{"joined a"}},
				{at: 5999 * time.Millisecond, expire: true},
				{at: 6 * time.Second, expire: true, want: []string{"left a"}},
			},
		},
		{
			name: "a refresh moves expiry",
			steps: []step{
				{observe: ptr(mdns(rec(devA, "a", "r1"), "eth0", addr1)), want: []string{"joined a"}},
				{at: 4 * time.Second, observe: ptr(mdns(rec(devA, "a", "r1"), "eth0", addr1))},
				{at: 9 * time.Second, expire: true},
				{at: 10 * time.Second, expire: true, want: []string{"left a"}},
			},
		},
		{
			name: "goodbye removes at once",
			steps: []step{
				{observe: ptr(mdns(rec(devA, "a", "r1"), "eth0", addr1)), want: []string{"joined a"}},
				{at: time.Second, goodbye: ptr(rec(devA, "a", "r1")), want: []string{"left a"}},
				{at: time.Second, goodbye: ptr(rec(devA, "a", "r1"))},
			},
		},
		{
			name: "goodbye of an unknown run changes nothing",
			steps: []step{
				{observe: ptr(mdns(rec(devA, "a", "r1"), "eth0", addr1)), want: []string{"joined a"}},
				{at: time.Second, goodbye: ptr(rec(devA, "a", "r0"))},
			},
			wantPeers: []string{"a [mdns] [eth0] [10.0.0.1:47470] false"},
		},
		{
			name: "manual entry never expires and survives an mDNS goodbye",
			steps: []step{
				{observe: &Sighting{Record: Record{ID: devA}, Source: SourceManual, Addrs: []netip.AddrPort{addr2}}, want: []string{"joined "}},
				{at: time.Second, observe: ptr(mdns(rec(devA, "a", "r1"), "eth0", addr1)), want: []string{"updated a"}},
				{at: 2 * time.Second, goodbye: ptr(rec(devA, "a", "r1")), want: []string{"updated "}},
				{at: time.Hour, expire: true},
				{at: time.Hour, remove: devA, want: []string{"left "}},
			},
		},
		{
			name: "restart with a new run is not a conflict",
			steps: []step{
				{observe: ptr(mdns(rec(devA, "a", "r1"), "eth0", addr1)), want: []string{"joined a"}},
				{at: 1 * time.Second, observe: ptr(mdns(rec(devA, "a", "r1"), "eth0", addr1))},
				// killed; comes back as r2 before r1 expires
				{at: 3 * time.Second, observe: ptr(mdns(rec(devA, "a", "r2"), "eth0", addr1))},
				{at: 5 * time.Second, observe: ptr(mdns(rec(devA, "a", "r2"), "eth0", addr1))},
				{at: 7 * time.Second, expire: true},
			},
			wantPeers: []string{"a [mdns] [eth0] [10.0.0.1:47470] false"},
		},
		{
			name: "two live runs of one ID are a conflict",
			steps: []step{
				{observe: ptr(mdns(rec(devA, "a", "r1"), "eth0", addr1)), want: []string{"joined a"}},
				{at: 1 * time.Second, observe: ptr(mdns(rec(devA, "a", "r2"), "eth0", addr2)), want: []string{"updated a"}},
				{at: 2 * time.Second, observe: ptr(mdns(rec(devA, "a", "r1"), "eth0", addr1)), want: []string{"conflict a"}},
				{at: 3 * time.Second, observe: ptr(mdns(rec(devA, "a", "r2"), "eth0", addr2))},
				{at: 3 * time.Second, goodbye: ptr(rec(devA, "a", "r2")), want: []string{"updated a"}},
			},
			wantPeers: []string{"a [mdns] [eth0] [10.0.0.1:47470] false"},
		},
		{
			name: "own run is ignored, a copy of this device is reported once",
			steps: []step{
				{observe: ptr(mdns(rec(self, "me", "mine"), "eth0", addr1))},
				{at: time.Second, observe: ptr(mdns(rec(self, "me", "copy"), "eth0", addr2))},
				{at: 2 * time.Second, observe: ptr(mdns(rec(self, "me", "copy"), "eth0", addr2)), want: []string{"self-conflict me"}},
				{at: 3 * time.Second, observe: ptr(mdns(rec(self, "me", "copy"), "eth0", addr2))},
			},
		},
		{
			name: "zero TTL is clamped so a peer does not flap",
			steps: []step{
				{observe: &Sighting{Record: rec(devB, "b", "r"), Source: SourceMDNS, TTL: 0}, want: []string{"joined b"}},
				{at: 999 * time.Millisecond, expire: true},
				{at: time.Second, expire: true, want: []string{"left b"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := NewTable(self, "mine")
			for i, s := range tt.steps {
				now := t0.Add(s.at)
				var evs []Event
				switch {
				case s.observe != nil:
					evs = tab.Observe(*s.observe, now)
				case s.goodbye != nil:
					evs = tab.Goodbye(s.goodbye.ID, s.goodbye.Run, now)
				case s.expire:
					evs = tab.Expire(now)
				case !s.remove.IsZero():
					evs = tab.Remove(s.remove)
				}
				var got []string
				for _, e := range evs {
					kind := e.Kind.String()
					if e.Self {
						kind = "self-" + kind
					}
					got = append(got, kind+" "+e.Peer.Record.Name)
				}
				if diff := cmp.Diff(s.want, got); diff != "" {
					t.Errorf("step %d events (-want +got):\n%s", i, diff)
				}
			}
			var peers []string
			for _, p := range tab.Peers() {
				peers = append(peers, fmt.Sprint(p.Record.Name, " ", p.Sources, " ", p.Ifaces, " ", p.Addrs, " ", p.Conflict))
			}
			if diff := cmp.Diff(tt.wantPeers, peers); diff != "" {
				t.Errorf("peers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNextExpiry(t *testing.T) {
	tab := NewTable(self, "mine")
	if !tab.NextExpiry().IsZero() {
		t.Fatal("empty table has an expiry")
	}
	tab.Observe(mdns(rec(devA, "a", "r1"), "eth0", addr1), t0)
	tab.Observe(mdns(rec(devB, "b", "r1"), "eth0", addr2), t0.Add(time.Second))
	if got, want := tab.NextExpiry(), t0.Add(6*time.Second); !got.Equal(want) {
		t.Errorf("NextExpiry = %v, want %v", got, want)
	}
}

func TestTXTRoundTrip(t *testing.T) {
	r := rec(devA, "Küche", "0a1b2c")
	got, err := DecodeTXT(r.EncodeTXT())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	long := rec(devA, strings.Repeat("ü", 40), "r")
	got, err = DecodeTXT(long.EncodeTXT())
	if err != nil || len(got.Name) > MaxNameBytes || !strings.HasPrefix(long.Name, got.Name) {
		t.Errorf("long name: %q, %v; want a whole-rune prefix of at most %d bytes", got.Name, err, MaxNameBytes)
	}
}

func TestDecodeTXT(t *testing.T) {
	good := rec(devA, "a", "r").EncodeTXT()
	with := func(repl ...string) []string {
		out := append([]string{}, repl...)
		return append(out, good...) // first occurrence wins
	}
	tests := []struct {
		name    string
		txt     []string
		wantErr error
		check   func(Record) bool
	}{
		{"good", good, nil, func(r Record) bool { return r.ID == devA && r.Port == 47470 && r.Contribute }},
		{"future version with unknown keys", with("v=2", "gpu=yes"), nil, func(r Record) bool { return r.Version == 2 && r.ID == devA }},
		{"no version", good[1:], ErrTXT, nil},
		{"bad id", with("id=NOTANID"), ErrTXT, nil},
		{"non-canonical id", with("id=" + strings.Repeat("A", 51) + "B"), ErrTXT, nil},
		{"zero id", with("id=" + strings.Repeat("A", 52)), ErrTXT, nil},
		{"port zero", with("port=0"), ErrTXT, nil},
		{"port too big", with("port=70000"), ErrTXT, nil},
		{"proto reversed", with("proto=3-1"), ErrTXT, nil},
		{"not contributing", with("c=0"), nil, func(r Record) bool { return !r.Contribute }},
		{"empty", nil, ErrTXT, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := DecodeTXT(tt.txt)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if tt.check != nil && !tt.check(r) {
				t.Errorf("decoded %+v", r)
			}
		})
	}
}

func FuzzDecodeTXT(f *testing.F) {
	f.Add(strings.Join(rec(devA, "a", "r").EncodeTXT(), "\n"))
	f.Fuzz(func(t *testing.T, s string) {
		r, err := DecodeTXT(strings.Split(s, "\n"))
		if err != nil {
			return
		}
		// Whatever decodes must survive a round trip of its own encoding.
		r2, err := DecodeTXT(r.EncodeTXT())
		if err != nil {
			t.Fatalf("re-decode %+v: %v", r, err)
		}
		r.Version = TXTVersion
		if r != r2 {
			t.Fatalf("round trip changed %+v to %+v", r, r2)
		}
	})
}

// BenchmarkObserve is one mDNS answer into a table of 32 devices, the
// steady state of a browse round.
func BenchmarkObserve(b *testing.B) {
	tab := NewTable(self, "mine")
	var sightings []Sighting
	for i := range 32 {
		id := identity.IDFromCert([]byte{byte(i)})
		sightings = append(sightings, mdns(rec(id, fmt.Sprint("d", i), "r"), "eth0", addr1))
	}
	now := t0
	i := 0
	for b.Loop() {
		now = now.Add(time.Millisecond)
		tab.Observe(sightings[i%len(sightings)], now)
		i++
	}
}
