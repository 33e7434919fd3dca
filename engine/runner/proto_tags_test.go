package runner

import (
	"encoding/json"
	"strings"
	"testing"

	"homering/discovery/deviceid"
	"homering/internal/jsontags"
)

// The runner's pipe is JSON lines: every field of every message spells its
// name (no Go-field-name JSON), so renaming a Go field cannot change the
// protocol between an agent and its engine child.
func TestProtocolFieldsNamed(t *testing.T) {
	if missing := jsontags.Missing(Request{}, Event{}); len(missing) > 0 {
		t.Errorf("fields without a json tag on the runner's pipe: %v", missing)
	}
}

// Typed device IDs (issue 15 item 5) travel as the readable text the string
// fields carried: the pipe's JSON is unchanged.
func TestProtocolDeviceIDText(t *testing.T) {
	id := deviceid.ForName("worker")
	b, err := json.Marshal(ServeParams{Allowed: []deviceid.ID{id}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `"allowed":["` + id.String() + `"]`; !strings.Contains(string(b), want) {
		t.Errorf("ServeParams JSON %s, want %s", b, want)
	}
	b, err = json.Marshal(RingPeer{ID: id, Addr: "x:1"})
	if want := `{"id":"` + id.String() + `","addr":"x:1"}`; err != nil || string(b) != want {
		t.Errorf("RingPeer JSON %s, %v; want %s", b, err, want)
	}
	var back RingPeer
	if err := json.Unmarshal([]byte(`{"id":"`+strings.ToLower(id.Compact())+`","addr":"x:1"}`), &back); err != nil || back.ID != id {
		t.Errorf("RingPeer from the compact form: %v, %v", back.ID, err)
	}
}
