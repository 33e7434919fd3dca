package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSettingsFile(t *testing.T) {
	dir := t.TempDir()
	s, err := LoadSettings(dir)
	if err != nil || s != DefaultSettings() {
		t.Fatalf("no file: %+v, %v; want the defaults", s, err)
	}
	s.Model, s.MemoryBudget, s.RingKeepSeconds = "/m/x.gguf", 512<<20, 0
	if err := SaveSettings(dir, s); err != nil {
		t.Fatal(err)
	}
	got, err := LoadSettings(dir)
	if err != nil || got != s {
		t.Errorf("round trip: %+v, %v; want %+v", got, err, s)
	}
	if fi, err := os.Stat(filepath.Join(dir, SettingsFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600 (it holds the API key)", fi.Mode().Perm(), err)
	}
	// A file written before ring_keep_seconds existed starts from its default.
	_ = os.WriteFile(filepath.Join(dir, SettingsFile), []byte(`{"model": "/m/y.gguf", "context_tokens": 512}`), 0o600)
	if got, _ := LoadSettings(dir); got.RingKeepSeconds != DefaultRingKeepSeconds || got.Model != "/m/y.gguf" || !got.UseGPU() || got.APIPort != DefaultAPIPort {
		t.Errorf("old file: %+v (GPUs in use: %v)", got, got.UseGPU())
	}
	s.GPU = GPUOff
	if err := SaveSettings(dir, s); err != nil {
		t.Fatal(err)
	}
	if got, _ := LoadSettings(dir); got.UseGPU() {
		t.Errorf("gpu off did not survive a round trip: %+v", got)
	}
	_ = os.WriteFile(filepath.Join(dir, SettingsFile), []byte(`{"model": `), 0o600)
	if _, err := LoadSettings(dir); err == nil || !strings.Contains(err.Error(), "fix it or delete it") {
		t.Errorf("a broken file: %v, want a sentence saying what to do", err)
	}
}

func TestSettingsValidate(t *testing.T) {
	ok := DefaultSettings()
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Settings)
		want string
	}{
		{"context too small", func(s *Settings) { s.ContextTokens = 10 }, "outside 256-1048576"},
		{"negative budget", func(s *Settings) { s.MemoryBudget = -1 }, "cannot be negative"},
		{"no such folder", func(s *Settings) { s.ModelDir = "/no/such/folder" }, "does not exist"},
		{"keep too long", func(s *Settings) { s.RingKeepSeconds = MaxRingKeepSeconds + 1 }, "outside 0-3600"},
		{"exposed without a key", func(s *Settings) { s.Expose = true }, "API key of at least 16"},
		{"gpu neither on nor off", func(s *Settings) { s.GPU = "yes" }, `The gpu setting is "yes"; give on or off.`},
		{"API port not a port", func(s *Settings) { s.APIPort = 70000 }, "The API port 70000 is not a TCP port; use 1-65535 (default 47471)."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := DefaultSettings()
			tc.mod(&s)
			err := s.Validate()
			if !errors.Is(err, ErrSettings) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want ErrSettings saying %q", err, tc.want)
			}
		})
	}
}
