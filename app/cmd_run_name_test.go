package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"homering/app/config"
)

// TestRunByModelListName: run -m takes every name the model list shows: a
// file of the model folder without .gguf, and an Ollama store's NAME:TAG
// (with or without :latest, as Ollama spells it). An unknown name is one
// sentence saying what to give.
func TestRunByModelListName(t *testing.T) {
	stories, err := filepath.Abs(storiesModel)
	if err != nil {
		t.Fatal(err)
	}
	home, folder, user := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv(config.EnvHome, home)
	t.Setenv("HOME", user)
	set := config.DefaultSettings()
	set.ModelDir = folder
	if err := config.SaveSettings(home, set); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(stories, filepath.Join(folder, "Story-Teller.gguf")); err != nil {
		t.Fatal(err)
	}
	// An Ollama store: a manifest naming a model layer's blob.
	ollama := filepath.Join(user, ".ollama", "models")
	const digest = "sha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	manifest := filepath.Join(ollama, "manifests", "registry.ollama.ai", "library", "tinystory", "latest")
	if err := os.MkdirAll(filepath.Dir(manifest), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ollama, "blobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"layers": []map[string]string{{"mediaType": "application/vnd.ollama.image.model", "digest": strings.Replace(digest, "-", ":", 1)}}})
	if err := os.WriteFile(manifest, b, 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(stories)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ollama, "blobs", digest), data, 0o644); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"Story-Teller", "story-teller.gguf", "tinystory:latest", "tinystory"} {
		code, out, errs := runRun(t, "-m", name, "-n", "4", "--temp", "0", "--threads", "1", "Once")
		if code != 0 || strings.TrimSpace(out) == "" {
			t.Errorf("run -m %s: exit %d, stdout %q, stderr %q", name, code, out, errs)
		}
	}
	code, _, errs := runRun(t, "-m", "no-such-model", "-n", "4", "Once")
	if code != 1 || !strings.Contains(errs, `no model file or model named "no-such-model"`) {
		t.Errorf("run -m no-such-model: exit %d, stderr %q; want the sentence", code, errs)
	}
}
