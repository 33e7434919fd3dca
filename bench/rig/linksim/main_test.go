//go:build linux

package main

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    float64
		wantErr bool
	}{
		{name: "mbit", in: "300mbit", want: 300e6},
		{name: "gbit fraction", in: "1.5gbit", want: 1.5e9},
		{name: "kbit", in: "64kbit", want: 64e3},
		{name: "bits", in: "1000bit", want: 1000},
		{name: "plain number", in: "42", want: 42},
		{name: "zero", in: "0mbit", wantErr: true},
		{name: "negative", in: "-1mbit", wantErr: true},
		{name: "unit only", in: "mbit", wantErr: true},
		{name: "unknown unit", in: "3mbps", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseRate(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseRate(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("parseRate(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestAddrs(t *testing.T) {
	v4 := make([]byte, 20)
	v4[0] = 0x45
	copy(v4[12:], []byte{10, 78, 1, 1})
	copy(v4[16:], []byte{224, 0, 0, 251})
	v6 := make([]byte, 40)
	v6[0] = 0x60
	v6[8], v6[9], v6[23] = 0xfe, 0x80, 1
	v6[24], v6[25], v6[39] = 0xff, 0x02, 0xfb
	tests := []struct {
		name     string
		pkt      []byte
		src, dst string
		ok       bool
	}{
		{name: "IPv4", pkt: v4, src: "10.78.1.1", dst: "224.0.0.251", ok: true},
		{name: "IPv6", pkt: v6, src: "fe80::1", dst: "ff02::fb", ok: true},
		{name: "short IPv4", pkt: v4[:19]},
		{name: "short IPv6", pkt: v6[:39]},
		{name: "empty", pkt: nil},
		{name: "not IP", pkt: []byte{0x20, 1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, dst, ok := addrs(tt.pkt)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if diff := cmp.Diff(tt.src+" "+tt.dst, src.String()+" "+dst.String()); diff != "" {
				t.Errorf("addresses (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRoute(t *testing.T) {
	a, b, c := &port{name: "a"}, &port{name: "b"}, &port{name: "c"}
	s := &switchboard{ports: []*port{a, b, c}, learned: map[netip.Addr]int{
		netip.MustParseAddr("10.78.1.1"): 0, netip.MustParseAddr("10.78.1.2"): 1, netip.MustParseAddr("10.78.1.3"): 2,
	}}
	names := func(ps []*port) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.name)
		}
		return out
	}
	// Steps run in order: a learned address changes later routes.
	steps := []struct {
		name     string
		from     int
		src, dst string
		want     []string
	}{
		{name: "unicast to a known device", from: 0, src: "10.78.1.1", dst: "10.78.1.3", want: []string{"c"}},
		{name: "multicast floods to the others", from: 1, src: "10.78.1.2", dst: "224.0.0.251", want: []string{"a", "c"}},
		{name: "unknown destination floods", from: 2, src: "10.78.1.3", dst: "fe80::9", want: []string{"a", "b"}},
		{name: "b's link-local address is learned", from: 1, src: "fe80::9", dst: "ff02::fb", want: []string{"a", "c"}},
		{name: "now it is unicast", from: 2, src: "10.78.1.3", dst: "fe80::9", want: []string{"b"}},
		{name: "to itself goes nowhere", from: 0, src: "10.78.1.1", dst: "10.78.1.1", want: nil},
	}
	for _, st := range steps {
		got := names(s.route(st.from, netip.MustParseAddr(st.src), netip.MustParseAddr(st.dst)))
		if diff := cmp.Diff(st.want, got); diff != "" {
			t.Errorf("%s: ports (-want +got):\n%s", st.name, diff)
		}
	}
}
