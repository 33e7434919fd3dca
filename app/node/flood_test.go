package node

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"homering/discovery"
	"homering/discovery/identity"
	"homering/engine/ring/transport"
	"homering/internal/testlog"
)

// TestMDNSFloodCounted: a stranger announcing invented devices over mDNS
// fills the peer table to its bound and no further; what the bound drops is
// counted in Status and the doctor, and logged once, not per announcement.
func TestMDNSFloodCounted(t *testing.T) {
	logs := &testlog.Buffer{}
	n := testNodeLog(t, "worker", false, logs)
	const invented = discovery.MaxPeers + 200
	for i := 0; i < invented; i++ {
		id := identity.IDFromCert([]byte(fmt.Sprintf("flood-%d", i)))
		n.onSighting(discovery.Sighting{
			Record: discovery.Record{Version: 1, ID: id, Name: fmt.Sprintf("f%d", i), ProtoMin: 1, ProtoMax: 1, Port: 47470, Run: "x"},
			Source: discovery.SourceMDNS, Iface: "eth0", TTL: time.Hour,
			Addrs: []netip.AddrPort{netip.MustParseAddrPort("10.9.9.9:47470")},
		})
	}
	if got := len(n.Peers().Peers); got > discovery.MaxPeers || got < discovery.MaxPeers-1 {
		t.Errorf("the node lists %d devices after the flood, want the bound %d", got, discovery.MaxPeers)
	}
	got := n.Status().Refused[transport.RefusedMDNSFlood]
	if got < 200 {
		t.Errorf("mDNS flood refusals = %d, want at least 200", got)
	}
	var line string
	for _, ch := range n.Doctor().Checks {
		if ch.Name == "refused" {
			line = ch.Detail
		}
	}
	if !strings.Contains(line, fmt.Sprintf("%d mDNS flood", got)) {
		t.Errorf("doctor's refused line = %q, want the flood's count", line)
	}
	if c := strings.Count(logs.String(), "mDNS announcements past the peer table's bounds"); c != 1 {
		t.Errorf("the flood was logged %d times, want once", c)
	}
	if c := strings.Count(logs.String(), "peer joined"); c > discovery.MaxPeers {
		t.Errorf("%d 'peer joined' lines: the flood's devices are logged one by one", c)
	}
}
