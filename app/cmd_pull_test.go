package app

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/engine/modelgen"
)

// TestPullWithoutAgent: with no agent running, pull downloads into the
// model folder setting in this process, verified against the ETag, and a
// missing file is one sentence.
func TestPullWithoutAgent(t *testing.T) {
	home, models := t.TempDir(), t.TempDir()
	t.Setenv(config.EnvHome, home)
	set := config.DefaultSettings()
	set.ModelDir = models
	if err := config.SaveSettings(home, set); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := modelgen.Generate(src, modelgen.Config{Arch: "llama", Layers: 1, Embd: 64, FF: 128, Heads: 4, KVHeads: 4, Vocab: 400, Type: "F32"}); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/tiny.gguf" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
		http.ServeContent(w, r, "tiny.gguf", time.Time{}, bytes.NewReader(body))
	}))
	defer srv.Close()

	code, out, errs := runCmd(t, "pull", srv.URL+"/tiny.gguf")
	if code != 0 {
		t.Fatalf("pull exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "matches the SHA-256") || !strings.Contains(out, filepath.Join(models, "tiny.gguf")) {
		t.Errorf("pull printed %q, want the verified file's path", out)
	}
	if !strings.Contains(errs, "Downloading tiny.gguf") {
		t.Errorf("no progress line on stderr: %q", errs)
	}
	if got, _ := os.ReadFile(filepath.Join(models, "tiny.gguf")); !bytes.Equal(got, body) {
		t.Error("the model folder's file differs from the served one")
	}

	code, _, errs = runCmd(t, "pull", srv.URL+"/missing.gguf")
	if code != 1 || !strings.Contains(errs, "404") || strings.Count(strings.TrimSpace(errs), "\n") > 1 {
		t.Errorf("pull of a missing file: exit %d, %q; want 1 and one line naming the 404", code, errs)
	}
	if _, err := os.Stat(filepath.Join(models, "missing.gguf.partial")); err == nil {
		t.Error("a 404 left a partial")
	}

	code, _, errs = runCmd(t, "pull", "llama3")
	if code != 1 || !strings.Contains(errs, "Hugging Face reference") {
		t.Errorf("pull llama3: exit %d, %q; want what to give", code, errs)
	}
}

// TestPullThroughAgent: with an agent running, pull asks it (so the app
// shows the bar) and follows the download to its end.
func TestPullThroughAgent(t *testing.T) {
	var polls atomic.Int32
	p := apitype.Pull{ID: "download:m.gguf", Ref: "o/r:m.gguf", Name: "m.gguf", State: apitype.PullRunning}
	fakeAgent(t, map[string]func() any{
		"POST /api/v1/pull": func() any { return p },
		"GET /api/v1/pulls": func() any {
			q := p
			q.Done, q.Total = 50, 100
			if polls.Add(1) >= 2 {
				q.State, q.Done, q.Path, q.Verified = apitype.PullDone, 100, "/models/m.gguf", true
				q.Message = "m.gguf is downloaded and matches the SHA-256 the server publishes."
			}
			return []apitype.Pull{q}
		},
	})
	code, out, errs := runCmd(t, "pull", "o/r:m.gguf")
	if code != 0 {
		t.Fatalf("pull exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "matches the SHA-256") || !strings.Contains(out, "/models/m.gguf") {
		t.Errorf("pull printed %q", out)
	}
	if !strings.Contains(errs, "50 B of 100 B (50%)") {
		t.Errorf("no progress line: %q", errs)
	}
}
