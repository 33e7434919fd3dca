package transport

import (
	"errors"
	"testing"

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
