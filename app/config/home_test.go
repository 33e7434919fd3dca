package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestExpandHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home) // Windows
	for in, want := range map[string]string{
		"~":        home,
		"~/models": filepath.Join(home, "models"),
		"~other/x": "~other/x",
		"/abs/~/x": "/abs/~/x",
		"models":   "models",
		"":         "",
	} {
		if got := ExpandHome(in); got != want {
			t.Errorf("ExpandHome(%q) = %q, want %q", in, got, want)
		}
	}
	// A hand-edited settings.json with ~ reads as the home folder.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, SettingsFile), []byte(`{"model_dir": "~/models", "model": "~/models/a.gguf"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSettings(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.ModelDir != filepath.Join(home, "models") || s.Model != filepath.Join(home, "models", "a.gguf") {
		t.Errorf("loaded %q and %q, want them under %s", s.ModelDir, s.Model, home)
	}
}
