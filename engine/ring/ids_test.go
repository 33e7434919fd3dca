package ring

import (
	"bytes"
	"strings"

	"homering/discovery/deviceid"
)

// tid is the device ID a test's device name stands for: the name's bytes,
// so that IDs sort as their names do (as ringtest.ID makes them).
func tid(name string) deviceid.ID {
	var id deviceid.ID
	copy(id[:], name)
	return id
}

// tname is the name tid made id from.
func tname(id deviceid.ID) string { return string(bytes.TrimRight(id[:], "\x00")) }

// named writes the test devices' IDs in s (reasons name devices) as their
// names.
func named(s string) string {
	for _, n := range []string{"a", "b", "c", "h", "v", "w"} {
		s = strings.ReplaceAll(s, tid(n).String(), n)
	}
	return s
}

func byName[V any](m map[deviceid.ID]V) map[string]V {
	out := make(map[string]V, len(m))
	for id, v := range m {
		out[tname(id)] = v
	}
	return out
}

func byID[V any](m map[string]V) map[deviceid.ID]V {
	out := make(map[deviceid.ID]V, len(m))
	for n, v := range m {
		out[tid(n)] = v
	}
	return out
}
