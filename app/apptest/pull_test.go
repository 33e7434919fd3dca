//go:build linux

package apptest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"homering/engine/modelgen"
)

// TestWebUIPull: downloading a model from the Models page (issue 18 item
// 6). A real `homering headless` with an empty model folder; in its
// network namespace, frontend/tests/pull.mjs serves a GGUF on loopback with
// Range and a SHA-256 ETag (once cut halfway, once with a wrong checksum)
// and drives chromium through the Download field, then drops a .gguf on
// the window and picks the model folder with Settings' Browse. This test
// then checks the folder: the two good downloads and
// the dropped file whole and named, nothing of the bad one, no partial
// left behind.
func TestWebUIPull(t *testing.T) {
	needFrontend(t)
	src := filepath.Join(t.TempDir(), "served.gguf")
	if err := modelgen.Generate(src, modelgen.Config{Arch: "llama", Layers: 2, Embd: 256, FF: 512, Heads: 4, KVHeads: 4, Vocab: 1000, Type: "F32"}); err != nil {
		t.Fatal(err)
	}
	e := NewEnv(t)
	n := e.NewNode(t, "den")
	models := t.TempDir()
	settings, _ := json.Marshal(map[string]any{"model_dir": models})
	if err := os.WriteFile(filepath.Join(n.Home, "settings.json"), settings, 0o600); err != nil {
		t.Fatal(err)
	}
	n.Start(t)
	runUIScript(t, n, "pull.mjs", 17, []string{"downloading.png", "downloaded.png", "refused.png", "dropped.png", "browse.png"}, "GGUF_FILE="+src, "MODEL_DIR="+models)

	want, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	es, _ := os.ReadDir(models)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"cut.gguf", "dropped.gguf", "tiny.gguf"}) {
		t.Errorf("the model folder holds %v, want cut.gguf, dropped.gguf and tiny.gguf alone", names)
	}
	for _, name := range []string{"cut.gguf", "dropped.gguf", "tiny.gguf"} {
		if got, err := os.ReadFile(filepath.Join(models, name)); err != nil || string(got) != string(want) {
			t.Errorf("%s differs from the served file (%v)", name, err)
		}
	}
}
