package apitype

import (
	"encoding/json"
	"testing"
	"time"

	"homering/discovery/deviceid"
)

// Typed device IDs (issue 15 item 5) keep the API's JSON text: the
// readable form where there is a device, "" or nothing where there is none,
// as the string fields wrote.
func TestDeviceIDJSON(t *testing.T) {
	id := deviceid.ForName("desk")
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"device", Device{ID: id, Short: id.Short()}, `{"id":"` + id.String() + `","short":"` + id.Short() + `","name":"","app":"","proto_min":0,"proto_max":0}`},
		{"no device", Device{}, `{"id":"","short":"","name":"","app":"","proto_min":0,"proto_max":0}`},
		{"pair result", PairResult{Peer: id, OK: true, At: at}, `{"peer":"` + id.String() + `","ok":true,"at":"2026-11-26T12:00:00Z"}`},
		{"pair result without a peer", PairResult{Error: "wrong code", At: at}, `{"ok":false,"error":"wrong code","at":"2026-11-26T12:00:00Z"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.v)
			if err != nil || string(b) != tt.want {
				t.Fatalf("JSON %s, %v; want %s", b, err, tt.want)
			}
			back := tt.v
			switch tt.v.(type) {
			case Device:
				var d Device
				err, back = json.Unmarshal(b, &d), d
			case PairResult:
				var r PairResult
				err, back = json.Unmarshal(b, &r), r
			}
			if err != nil || back != tt.v {
				t.Errorf("read back %+v, %v; want %+v", back, err, tt.v)
			}
		})
	}
}
