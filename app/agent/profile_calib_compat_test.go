package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCalibStoreReadsOldFiles: ratios stored by the code before
// engine/profile/envelope (its calibFile struct, as it was) are read, and
// the store writes that format byte for byte still.
func TestCalibStoreReadsOldFiles(t *testing.T) {
	s := newCalibStore(t.TempDir(), slog.New(slog.DiscardHandler))
	key := calibKey("dev", "m.gguf", 1)
	type oldFile struct {
		SHA256 string          `json:"sha256"`
		Entry  json.RawMessage `json:"entry"`
	}
	eb, err := json.Marshal(calibEntry{Key: key, Ratios: []float64{1.5}})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(eb)
	old, err := json.Marshal(oldFile{SHA256: hex.EncodeToString(sum[:]), Entry: eb})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.path(key), old, 0o600); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float64{1.5}, s.ratios(key)); diff != "" {
		t.Fatalf("ratios of an old file (-want +got):\n%s", diff)
	}

	// Rewriting the same ratios (a window of one) gives the old bytes.
	if err := os.Remove(s.path(key)); err != nil {
		t.Fatal(err)
	}
	if err := s.add(key, 1.5); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(s.path(key))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(old), string(b)); diff != "" {
		t.Errorf("file add writes (-old code's +got):\n%s", diff)
	}
}
