package identity

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func TestDeviceIDRoundTrip(t *testing.T) {
	id := IDFromCert([]byte("some certificate bytes"))
	s := id.String()
	if len(s) != 63 || strings.Count(s, "-") != 7 {
		t.Fatalf("String() = %q, want 8 groups of 7", s)
	}
	for _, in := range []string{s, strings.ToLower(s), strings.ReplaceAll(s, "-", ""), id.Compact()} {
		got, err := ParseDeviceID(in)
		if err != nil || got != id {
			t.Errorf("ParseDeviceID(%q) = %v, %v; want %v", in, got, err, id)
		}
	}
	if id.Short() != s[:7] {
		t.Errorf("Short() = %q, want %q", id.Short(), s[:7])
	}
}

// Parsing and its errors are deviceid's (deviceid_test.go): ParseDeviceID
// and the ErrID* values forward to it.

func TestCode(t *testing.T) {
	c, err := NewCode(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseCode(c.String())
	if err != nil || got != c {
		t.Fatalf("ParseCode(%q) = %q, %v", c.String(), got, err)
	}
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"known good", "796-428-019", nil}, // hand-checked: Luhn of 79642801 is 9
		{"spaces", " 796 428 019 ", nil},
		{"typo", "796-428-018", ErrCodeTypo},
		{"swap", "769-428-019", ErrCodeTypo},
		{"too short", "796-428", ErrCodeFormat},
		{"letters", "796-42a-014", ErrCodeFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseCode(tt.in); !errors.Is(err, tt.want) {
				t.Errorf("ParseCode(%q) error = %v, want %v", tt.in, err, tt.want)
			}
		})
	}
}

func TestLoadOrCreatePersistsAndRestricts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "conf")
	a, err := LoadOrCreate(dir, t0, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadOrCreate(dir, t0.Add(time.Hour), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != b.ID {
		t.Fatalf("second load made a new identity: %v != %v", a.ID, b.ID)
	}
	checkMode := func(p string, want os.FileMode) {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s mode = %o, want %o", p, got, want)
		}
	}
	checkMode(dir, 0o700)
	checkMode(filepath.Join(dir, KeyFile), 0o600)
	checkMode(filepath.Join(dir, CertFile), 0o600)

	// A loosened key is tightened on the next load.
	if err := os.Chmod(filepath.Join(dir, KeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreate(dir, t0, rand.Reader); err != nil {
		t.Fatal(err)
	}
	checkMode(filepath.Join(dir, KeyFile), 0o600)

	// A damaged key is reported, not replaced: replacing would change the ID.
	if err := os.WriteFile(filepath.Join(dir, KeyFile), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreate(dir, t0, rand.Reader); !errors.Is(err, ErrCorrupt) {
		t.Errorf("damaged key: error = %v, want ErrCorrupt", err)
	}
}

func TestPairedPersists(t *testing.T) {
	dir := t.TempDir()
	a, b := IDFromCert([]byte("a")), IDFromCert([]byte("b"))
	var p Paired
	p.Add(PairedDevice{ID: b, Name: "bee", PairedAt: t0})
	p.Add(PairedDevice{ID: a, Name: "ay", PairedAt: t0})
	p.Add(PairedDevice{ID: a, Name: "ay renamed", PairedAt: t0})
	if err := SavePaired(dir, p); err != nil {
		t.Fatal(err)
	}
	got, err := LoadPaired(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if len(got.Devices) != 2 || !got.Has(a) || !got.Has(b) {
		t.Errorf("got %+v, want a and b once each", got)
	}
	if !got.Remove(a) || got.Has(a) || got.Remove(a) {
		t.Errorf("Remove(a) did not remove exactly once")
	}
	empty, err := LoadPaired(t.TempDir())
	if err != nil || len(empty.Devices) != 0 {
		t.Errorf("missing file: %+v, %v; want empty set", empty, err)
	}
	if err := os.WriteFile(filepath.Join(dir, PairedFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPaired(dir); !errors.Is(err, ErrCorrupt) {
		t.Errorf("damaged file: error = %v, want ErrCorrupt", err)
	}
}

func TestPake(t *testing.T) {
	head, worker := IDFromCert([]byte("head")), IDFromCert([]byte("worker"))
	mallory := IDFromCert([]byte("mallory"))
	code, wrong := Code("796428019"), Code("123456782")
	tests := []struct {
		name                string
		headCode, workCode  Code
		headSeesWorkerAs    DeviceID // what the head's TLS showed it
		workerSeesHeadAs    DeviceID
		wantHeadOK, wantWOK bool
	}{
		{"same code, direct", code, code, worker, head, true, true},
		{"wrong code", wrong, code, worker, head, false, false},
		{"man in the middle swaps certificates", code, code, mallory, mallory, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, shareA, err := NewPake(RoleHead, tt.headCode, head, tt.headSeesWorkerAs, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			b, shareB, err := NewPake(RoleWorker, tt.workCode, worker, tt.workerSeesHeadAs, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(shareA, shareB) {
				t.Fatal("shares equal")
			}
			if err := a.Finish(shareB); err != nil {
				t.Fatal(err)
			}
			if err := b.Finish(shareA); err != nil {
				t.Fatal(err)
			}
			if got := a.Verify(b.Confirmation()) == nil; got != tt.wantHeadOK {
				t.Errorf("head accepts worker = %v, want %v", got, tt.wantHeadOK)
			}
			if got := b.Verify(a.Confirmation()) == nil; got != tt.wantWOK {
				t.Errorf("worker accepts head = %v, want %v", got, tt.wantWOK)
			}
		})
	}
	p, _, _ := NewPake(RoleHead, code, head, worker, rand.Reader)
	if err := p.Finish([]byte{4, 1, 2, 3}); !errors.Is(err, ErrPakePoint) {
		t.Errorf("Finish(garbage) = %v, want ErrPakePoint", err)
	}
}

// BenchmarkPairing is one full SPAKE2 exchange, both sides: what a person
// waits for after typing the code, minus the network.
func BenchmarkPairing(b *testing.B) {
	head, worker := IDFromCert([]byte("head")), IDFromCert([]byte("worker"))
	code := Code("796428019")
	for b.Loop() {
		a, sa, _ := NewPake(RoleHead, code, head, worker, rand.Reader)
		w, sw, _ := NewPake(RoleWorker, code, worker, head, rand.Reader)
		if a.Finish(sw) != nil || w.Finish(sa) != nil || a.Verify(w.Confirmation()) != nil {
			b.Fatal("pairing failed")
		}
	}
}
