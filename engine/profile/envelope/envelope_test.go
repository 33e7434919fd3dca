package envelope

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type ratios struct {
	Key    string    `json:"key"`
	Ratios []float64 `json:"ratios"`
}

// oldSeal is how engine/profile's Cache.store and app's calibStore.add
// wrote their files before this package: a struct of the checksum and the
// payload under the file kind's field name. Files on users' machines look
// like this.
func oldSeal(t *testing.T, field string, v any) []byte {
	t.Helper()
	pb, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(pb)
	var b []byte
	switch field {
	case "profile":
		b, err = json.Marshal(struct {
			SHA256  string          `json:"sha256"`
			Profile json.RawMessage `json:"profile"`
		}{hex.EncodeToString(sum[:]), pb})
	case "entry":
		b, err = json.Marshal(struct {
			SHA256 string          `json:"sha256"`
			Entry  json.RawMessage `json:"entry"`
		}{hex.EncodeToString(sum[:]), pb})
	default:
		t.Fatalf("no old file kind has field %q", field)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSealWritesTheOldFormat(t *testing.T) {
	// <, > and & are escaped by json.Marshal; the payload must stay so.
	v := ratios{Key: "dev|<m>&.gguf|12|t1", Ratios: []float64{1.5, 0.8}}
	for _, field := range []string{"profile", "entry"} {
		t.Run(field, func(t *testing.T) {
			got, err := Seal(field, v)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(oldSeal(t, field, v)), string(got)); diff != "" {
				t.Errorf("Seal (-old code's bytes +got):\n%s", diff)
			}
		})
	}
}

func TestOpen(t *testing.T) {
	v := ratios{Key: "dev|m.gguf|12|t1", Ratios: []float64{1.5, 0.8}}
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	old := string(oldSeal(t, "entry", v))
	sealed, err := Seal("entry", v)
	if err != nil {
		t.Fatal(err)
	}
	indented := func() string {
		var m map[string]any
		if err := json.Unmarshal([]byte(old), &m); err != nil {
			t.Fatal(err)
		}
		b, _ := json.MarshalIndent(m, "", "\t")
		return string(b)
	}()
	tests := []struct {
		name    string
		file    string
		field   string
		wantErr error // nil: want the payload back
	}{
		{name: "a file the old code wrote", file: old, field: "entry"},
		{name: "what Seal writes", file: string(sealed), field: "entry"},
		{name: "re-indented by hand", file: indented, field: "entry"},
		{name: "a changed value", file: strings.Replace(old, "1.5", "2.5", 1), field: "entry", wantErr: ErrChecksum},
		{name: "a changed checksum", file: strings.Replace(old, `"sha256":"`, `"sha256":"0`, 1), field: "entry", wantErr: ErrChecksum},
		{name: "another file kind's field", file: old, field: "profile", wantErr: ErrMalformed},
		{name: "no checksum", file: `{"entry":` + string(want) + `}`, field: "entry", wantErr: ErrMalformed},
		{name: "a checksum that is not a string", file: `{"sha256":1,"entry":` + string(want) + `}`, field: "entry", wantErr: ErrMalformed},
		{name: "truncated", file: old[:len(old)/2], field: "entry", wantErr: ErrMalformed},
		{name: "empty", file: "", field: "entry", wantErr: ErrMalformed},
		{name: "not an object", file: `[1, 2]`, field: "entry", wantErr: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Open([]byte(tt.file), tt.field)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Open = %s, %v; want %v", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var back ratios
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(v, back); diff != "" {
				t.Errorf("payload (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSealRefusesWhatJSONCannotHold(t *testing.T) {
	if _, err := Seal("entry", func() {}); err == nil {
		t.Error("Seal of a func succeeded")
	}
}
