package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"homering/app/api/apitype"
	"homering/internal/testwait"
)

// TestPullEndpoint: POST /api/v1/pull downloads into the model folder in
// the background, GET /api/v1/pulls tells how it ended, and the model
// list shows the file; without a model folder the request is refused with
// what to do.
func TestPullEndpoint(t *testing.T) {
	srv, _, home := uiServer(t)
	body, err := os.ReadFile(storiesModel)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
		http.ServeContent(w, r, "x.gguf", time.Time{}, bytes.NewReader(body))
	}))
	defer host.Close()

	var e apitype.Error
	if code := do(t, srv, "POST", "/api/v1/pull", apitype.PullRequest{Ref: host.URL + "/stories.gguf"}, &e); code != 400 || e.Error == "" {
		t.Errorf("pull without a model folder: %d %q, want 400 saying what to do", code, e.Error)
	}
	if code := do(t, srv, "POST", "/api/v1/pull", apitype.PullRequest{Ref: "llama3"}, &e); code != 400 {
		t.Errorf("pull llama3: %d %q, want 400", code, e.Error)
	}

	// The model folder, given with ~ as a person types it.
	if err := os.Mkdir(filepath.Join(home, "models"), 0o755); err != nil {
		t.Fatal(err)
	}
	var st apitype.Settings
	do(t, srv, "GET", "/api/v1/settings", nil, &st)
	st.ModelDir = "~/models"
	if code := do(t, srv, "POST", "/api/v1/settings", st, &st); code != 200 || st.ModelDir != filepath.Join(home, "models") {
		t.Fatalf("settings with ~/models: %d, model_dir %q, want %s", code, st.ModelDir, filepath.Join(home, "models"))
	}

	var p apitype.Pull
	if code := do(t, srv, "POST", "/api/v1/pull", apitype.PullRequest{Ref: host.URL + "/stories.gguf"}, &p); code != 200 || p.State != apitype.PullRunning {
		t.Fatalf("pull: %d %+v", code, p)
	}
	testwait.True(t, 20*time.Second, "the download to end", func() bool {
		var list []apitype.Pull
		do(t, srv, "GET", "/api/v1/pulls", nil, &list)
		for _, q := range list {
			if q.ID == p.ID && q.State != apitype.PullRunning {
				p = q
				return true
			}
		}
		return false
	})
	if p.State != apitype.PullDone || !p.Verified || p.Path != filepath.Join(home, "models", "stories.gguf") {
		t.Errorf("pull ended %+v, want done and verified", p)
	}
	var ms apitype.Models
	do(t, srv, "GET", "/api/v1/models", nil, &ms)
	found := false
	for _, m := range ms.Models {
		found = found || m.Name == "stories"
	}
	if !found {
		t.Errorf("the model list %+v lacks the download", ms.Models)
	}
	if code := do(t, srv, "POST", "/api/v1/pull/cancel", apitype.PullCancelRequest{ID: p.ID}, &e); code != 400 {
		t.Errorf("cancel of an ended download: %d, want 400", code)
	}

	// A file dropped on the window: the body of POST /api/v1/models/file.
	add := func(name string, b []byte, out any) int {
		req, _ := http.NewRequest("POST", srv.URL+"/api/v1/models/file?name="+name, bytes.NewReader(b))
		req.AddCookie(&http.Cookie{Name: TokenCookie, Value: "secret"})
		return send(t, srv, req, out).StatusCode
	}
	var added apitype.Pull
	if code := add("dropped.gguf", body, &added); code != 200 || added.Path != filepath.Join(home, "models", "dropped.gguf") {
		t.Errorf("adding dropped.gguf: %d %+v", code, added)
	}
	if code := add("notes.gguf", []byte("not a model"), &e); code != 400 || !strings.Contains(e.Error, "not a usable GGUF") {
		t.Errorf("adding a text file: %d %q, want 400 saying it is no GGUF", code, e.Error)
	}
	if code := add("dropped.gguf", body, &e); code != 400 || !strings.Contains(e.Error, "already has a file named dropped.gguf") {
		t.Errorf("adding a taken name: %d %q", code, e.Error)
	}
	es, _ := os.ReadDir(filepath.Join(home, "models"))
	if len(es) != 2 {
		t.Errorf("the model folder holds %d files, want stories.gguf and dropped.gguf", len(es))
	}
}

// TestFolders: the model folder's Browse lists the folders inside a path
// (~ is home; hidden ones left out) with its parent and GGUF count, and a
// missing folder is one sentence.
func TestFolders(t *testing.T) {
	srv, _, home := uiServer(t)
	for _, d := range []string{"models", "Music", ".cache"} {
		if err := os.Mkdir(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, "models", "a.gguf"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var f apitype.Folders
	if code := do(t, srv, "GET", "/api/v1/folders?path=~", nil, &f); code != 200 || f.Path != home || f.Parent != filepath.Dir(home) || strings.Join(f.Folders, ",") != "models,Music" {
		t.Errorf("folders of ~: %d %+v, want models and Music in %s", code, f, home)
	}
	if do(t, srv, "GET", "/api/v1/folders?path="+filepath.Join(home, "models"), nil, &f); f.GGUFs != 1 || len(f.Folders) != 0 {
		t.Errorf("folders of models: %+v, want one GGUF and no folders", f)
	}
	var e apitype.Error
	if code := do(t, srv, "GET", "/api/v1/folders?path="+filepath.Join(home, "nope"), nil, &e); code != 400 || !strings.HasPrefix(e.Error, "Cannot open the folder") || !strings.HasSuffix(e.Error, "pick another folder.") {
		t.Errorf("a missing folder: %d %q", code, e.Error)
	}
}
