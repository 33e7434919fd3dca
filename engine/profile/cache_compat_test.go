package profile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestCacheReadsOldFiles: a profile cached by the code before
// engine/profile/envelope (its entry struct, as it was) is served without
// measuring, and Cache writes that format byte for byte still.
func TestCacheReadsOldFiles(t *testing.T) {
	c := NewCache(t.TempDir(), testLog(t))
	f := &fakeMeasure{c: c}
	c.measure = f.measure
	o := Options{Threads: 1}
	p, err := f.measure(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	type oldEntry struct {
		SHA256  string          `json:"sha256"`
		Profile json.RawMessage `json:"profile"`
	}
	pb, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(pb)
	old, err := json.Marshal(oldEntry{SHA256: hex.EncodeToString(sum[:]), Profile: pb})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.path(p.Key), old, 0o600); err != nil {
		t.Fatal(err)
	}

	got, fresh, err := c.Get(context.Background(), o)
	if err != nil || fresh || f.count() != 1 {
		t.Fatalf("Get of an old file: fresh=%v measurements=%d err=%v; want it served from the cache", fresh, f.count()-1, err)
	}
	if diff := cmp.Diff(p, got, cmpopts.IgnoreFields(Profile{}, "Memory")); diff != "" {
		t.Errorf("profile read from the old file (-want +got):\n%s", diff)
	}

	if err := c.Store(p); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(c.path(p.Key))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(old), string(b)); diff != "" {
		t.Errorf("file Store writes (-old code's +got):\n%s", diff)
	}
}
