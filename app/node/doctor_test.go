package node

import (
	"errors"
	"strings"
	"testing"
)

// The doctor's multicast line never reports a failure that the devices
// seen over mDNS contradict.
func TestMulticastCheck(t *testing.T) {
	noRoute := errors.New("connect: network is unreachable")
	for _, tc := range []struct {
		name   string
		err    error
		seen   []string
		ok     bool
		detail string
	}{
		{"routable", nil, nil, true, "224.0.0.251 is routable"},
		{"no route, a device seen over mDNS", noRoute, []string{"b 7QK2"}, true, "mDNS works on this device's interfaces: it has seen b 7QK2"},
		{"no route, nothing seen", noRoute, nil, false, "no route to 224.0.0.251 (connect: network is unreachable) and no device seen over mDNS"},
	} {
		name, ok, detail := multicastCheck(tc.err, tc.seen)
		if name != "multicast route" || ok != tc.ok || !strings.Contains(detail, tc.detail) {
			t.Errorf("%s: %s %v %q, want ok %v and %q", tc.name, name, ok, detail, tc.ok, tc.detail)
		}
	}
}
