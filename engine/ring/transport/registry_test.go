package transport

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"homering/discovery/identity"
	"homering/engine/ring/wire"
)

// The table is the whole truth: values unique and ascending, each owner in
// its band, and the ring band exactly the types engine/ring/wire decodes.
func TestFrameRegistry(t *testing.T) {
	band := map[string][2]MsgType{"transport": {1, 31}, "control": {32, 47}, "ring": {64, 255}}
	seen := map[MsgType]string{}
	var last MsgType
	for _, f := range Frames() {
		if other, dup := seen[f.Type]; dup {
			t.Errorf("type %d is both %s and %s", f.Type, other, f.Name)
		}
		seen[f.Type] = f.Name
		if f.Type <= last {
			t.Errorf("%s (%d) is out of order after %d", f.Name, f.Type, last)
		}
		last = f.Type
		b, ok := band[f.Owner]
		if !ok || f.Type < b[0] || f.Type > b[1] {
			t.Errorf("%s (%d) of %q is outside its band %v", f.Name, f.Type, f.Owner, b)
		}
	}
	for v := 64; v <= 255; v++ {
		_, err := wire.Decode(wire.Type(v), nil)
		_, registered := seen[MsgType(v)]
		if known := !errors.Is(err, wire.ErrUnknownType); known != registered {
			t.Errorf("ring type %d: wire decodes it %v, the table lists it %v", v, known, registered)
		}
	}
	if ProtoMin > ProtoMax || ProtoMin == 0 {
		t.Errorf("protocol range %d-%d", ProtoMin, ProtoMax)
	}
}

// TestRefusesProtocolBeforeGPULayers: protocol 2 added each device's GPU
// layers to PlanInstall (engine/ring/wire), so a device still on 1 would
// misread every plan. Both ends refuse the link at the Hello with one
// sentence that names both versions and the device to update.
func TestRefusesProtocolBeforeGPULayers(t *testing.T) {
	if ProtoMin < 2 {
		t.Fatalf("ProtoMin = %d: this build would still speak protocol 1, whose plans have no GPU layers", ProtoMin)
	}
	old := Hello{ProtoMin: 1, ProtoMax: 1, Purpose: PurposeLink, App: "0.1.0", Name: "attic"}
	cur := Hello{ProtoMin: ProtoMin, ProtoMax: ProtoMax, Purpose: PurposeLink, App: "0.2.0", Name: "desk"}
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	farErr := make(chan error, 1)
	go func() {
		_, err := Handshake(c2, false, old, identity.DeviceID{1}, "desk.lan")
		farErr <- err
	}()
	_, err := Handshake(c1, true, cur, identity.DeviceID{2}, "attic.lan")
	want := fmt.Sprintf("transport: cannot talk to attic.lan: it runs Homering 0.1.0 (link protocol 1-1), this device runs Homering 0.2.0 (link protocol %d-%d); update the other device (attic.lan)",
		ProtoMin, ProtoMax)
	var ve *VersionError
	if !errors.As(err, &ve) || err.Error() != want {
		t.Errorf("this device: error = %v\nwant %s", err, want)
	}
	// The old device hears the same verdict from its side: update itself.
	if err := <-farErr; !errors.As(err, &ve) || !strings.HasSuffix(err.Error(), "; update this device") {
		t.Errorf("old device: error = %v, want a VersionError telling it to update", err)
	}
}
