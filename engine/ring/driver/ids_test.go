package driver

import (
	"bytes"

	"homering/discovery/deviceid"
	"homering/engine/ring/ringtest"
)

// tid is the device ID a test's device name stands for (the name's bytes,
// as in the ring's scripts).
var tid = ringtest.ID

// names are the names tid made ids from.
func names(ids []deviceid.ID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(bytes.TrimRight(id[:], "\x00"))
	}
	return out
}
