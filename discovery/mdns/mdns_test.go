package mdns

import (
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/grandcat/zeroconf"

	"homering/discovery"
	"homering/discovery/identity"
)

func pfx(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, x := range s {
		out = append(out, netip.MustParsePrefix(x))
	}
	return out
}

var sample = []Iface{
	{Name: "lo", Up: true, Loopback: true, Multicast: false, Prefixes: pfx("127.0.0.1/8")},
	{Name: "eth0", Up: true, Multicast: true, Prefixes: pfx("192.168.1.20/24", "fe80::1/64")},
	{Name: "wlan0", Up: false, Multicast: true, Prefixes: pfx("192.168.2.20/24")},
	{Name: "docker0", Up: true, Multicast: true, Prefixes: pfx("172.17.0.1/16")},
	{Name: "br-1a2b", Up: true, Multicast: true, Prefixes: pfx("172.18.0.1/16")},
	{Name: "veth12", Up: true, Multicast: true, Prefixes: pfx("169.254.3.3/16")},
	{Name: "virbr0", Up: true, Multicast: true, Prefixes: pfx("192.168.122.1/24")},
	{Name: "cni0", Up: true, Multicast: true, Prefixes: pfx("10.88.0.1/16")},
	{Name: "flannel.1", Up: true, Multicast: true, Prefixes: pfx("10.244.0.0/32")},
	{Name: "tun0", Up: true, Multicast: false, Prefixes: pfx("10.8.0.2/24")},
	{Name: "eth1", Up: true, Multicast: true, Prefixes: pfx("fe80::2/64")},
}

func TestChooseInterfaces(t *testing.T) {
	tests := []struct {
		name    string
		pin     string
		want    map[string]string // name → reason
		wantErr error
	}{
		{"defaults", "", map[string]string{
			"lo": "loopback", "eth0": "used", "wlan0": "link is down", "docker0": "container or VM bridge",
			"br-1a2b": "container or VM bridge", "veth12": "container or VM bridge", "virbr0": "container or VM bridge",
			"cni0": "container or VM bridge", "flannel.1": "container or VM bridge", "tun0": "no multicast on this link",
			"eth1": "no IPv4 address",
		}, nil},
		{"pin a bridge the user wants", "docker0", nil, nil},
		{"pin a down link", "wlan0", nil, ErrPinnedIface},
		{"pin a missing link", "eth9", nil, ErrPinnedIface},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ChooseInterfaces(sample, tt.pin)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if tt.want != nil {
				reasons := map[string]string{}
				for _, f := range got {
					reasons[f.Name] = f.Reason
				}
				if diff := cmp.Diff(tt.want, reasons); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			}
			if tt.pin != "" && err == nil {
				for _, f := range got {
					if f.Use != (f.Name == tt.pin) {
						t.Errorf("%s used = %v with pin %s", f.Name, f.Use, tt.pin)
					}
				}
			}
		})
	}
}

func TestInstanceNameRoundTrip(t *testing.T) {
	r := discovery.Record{ID: identity.IDFromCert([]byte("x")), Run: NewRun([4]byte{0xde, 0xad, 0xbe, 0xef})}
	name := InstanceName(r)
	if len(name) > 63 {
		t.Fatalf("instance name %q is %d bytes, DNS allows 63", name, len(name))
	}
	id, run, ok := parseInstance(name)
	if !ok || id != r.ID || run != "deadbeef" {
		t.Errorf("parseInstance(%q) = %v %q %v", name, id.Short(), run, ok)
	}
	if _, _, ok := parseInstance("someone else's printer"); ok {
		t.Error("foreign instance parsed")
	}
}

func TestToSighting(t *testing.T) {
	ifs, _ := ChooseInterfaces(sample, "")
	r := discovery.Record{Version: 1, ID: identity.IDFromCert([]byte("x")), Name: "attic", Port: 1, Run: "01020304"}
	e := zeroconf.NewServiceEntry(InstanceName(r), Service, Domain)
	e.Text, e.Port, e.TTL = r.EncodeTXT(), 47470, 6
	e.AddrIPv4 = []net.IP{net.ParseIP("192.168.1.30")}
	e.AddrIPv6 = []net.IP{net.ParseIP("fe80::9"), net.ParseIP("2001:db8::9")}
	s, err := toSighting(e, ifs)
	if err != nil {
		t.Fatal(err)
	}
	want := discovery.Sighting{
		Record: discovery.Record{Version: 1, ID: r.ID, Name: "attic", Port: 47470, Run: "01020304"},
		Source: discovery.SourceMDNS, Iface: "eth0", TTL: 6 * time.Second,
		Addrs: []netip.AddrPort{
			netip.MustParseAddrPort("192.168.1.30:47470"),
			netip.AddrPortFrom(netip.MustParseAddr("fe80::9").WithZone("eth0"), 47470),
			netip.MustParseAddrPort("[2001:db8::9]:47470"),
		},
	}
	if diff := cmp.Diff(want, s, cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	e.Text = []string{"v=1"}
	if _, err := toSighting(e, ifs); !errors.Is(err, discovery.ErrTXT) {
		t.Errorf("bad TXT: error = %v", err)
	}
}
