package pull

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"homering/engine/modelgen"
)

// model is a small real GGUF, made once per test process.
var model = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "pull-test")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "m.gguf")
	if err := modelgen.Generate(p, modelgen.Config{Arch: "llama", Layers: 2, Embd: 64, FF: 128, Heads: 4, KVHeads: 4, Vocab: 400, Type: "F32"}); err != nil {
		return nil, err
	}
	return os.ReadFile(p)
})

func ggufBytes(t *testing.T) []byte {
	t.Helper()
	b, err := model()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func shaHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// server serves body as a file with Range and ETag (http.ServeContent),
// unless its knobs say otherwise.
type server struct {
	body      []byte
	etag      string // "" none
	noRange   bool   // ignore Range: always 200 with all of it
	cutOnce   int    // >0: the first answer stops after this many bytes
	status    int    // !=0: answer this status alone
	mu        sync.Mutex
	ranges    []string // the Range header of each request
	cutServed bool
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.ranges = append(s.ranges, r.Header.Get("Range"))
	cutNow := s.cutOnce > 0 && !s.cutServed
	s.cutServed = s.cutServed || cutNow
	s.mu.Unlock()
	if s.status != 0 {
		http.Error(w, "no", s.status)
		return
	}
	if s.etag != "" {
		w.Header().Set("ETag", s.etag)
	}
	if cutNow {
		// Promise all of it, send part, then drop the connection.
		w.Header().Set("Content-Length", strconv.Itoa(len(s.body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(s.body[:s.cutOnce])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	if s.noRange {
		r.Header.Del("Range")
	}
	http.ServeContent(w, r, "m.gguf", time.Time{}, bytes.NewReader(s.body))
}

func (s *server) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ranges...)
}

func start(t *testing.T, s *server) string {
	t.Helper()
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts.URL
}

func folderFiles(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestGetVerifiedByETag(t *testing.T) {
	body := ggufBytes(t)
	s := &server{body: body, etag: `"` + shaHex(body) + `"`}
	url := start(t, s)
	dir := t.TempDir()
	var last [2]int64
	res, err := Get(context.Background(), Source{URL: url + "/m.gguf", Name: "m.gguf"}, dir, Options{Progress: func(d, tot int64) { last = [2]int64{d, tot} }})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verified || res.SHA256 != shaHex(body) || res.Size != int64(len(body)) {
		t.Errorf("result %+v, want verified with the body's sha256 and size", res)
	}
	if last != [2]int64{int64(len(body)), int64(len(body))} {
		t.Errorf("last progress %v, want the whole body", last)
	}
	if got := folderFiles(t, dir); len(got) != 1 || got[0] != "m.gguf" {
		t.Errorf("folder holds %v, want m.gguf alone", got)
	}
	// A second pull finds it there and fetches nothing.
	res, err = Get(context.Background(), Source{URL: url + "/m.gguf", Name: "m.gguf"}, dir, Options{})
	if err != nil || !res.Existing {
		t.Errorf("second pull: %+v, %v; want the existing file", res, err)
	}
	if n := len(s.seen()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestGetResumesWithRange: a partial left by an earlier try is resumed from
// its size, and the checksum covers the whole file.
func TestGetResumesWithRange(t *testing.T) {
	body := ggufBytes(t)
	s := &server{body: body, etag: `"` + shaHex(body) + `"`}
	url := start(t, s)
	dir := t.TempDir()
	half := len(body) / 2
	if err := os.WriteFile(filepath.Join(dir, "m.gguf.partial"), body[:half], 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Get(context.Background(), Source{URL: url + "/m.gguf", Name: "m.gguf"}, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verified {
		t.Error("not verified")
	}
	if got := s.seen(); len(got) != 1 || got[0] != fmt.Sprintf("bytes=%d-", half) {
		t.Errorf("ranges asked %q, want one from byte %d", got, half)
	}
}

// TestGetRangeIgnored: a server that answers a resume with 200 and the
// whole file gets the whole file written from the start, not appended.
func TestGetRangeIgnored(t *testing.T) {
	body := ggufBytes(t)
	s := &server{body: body, etag: `"` + shaHex(body) + `"`, noRange: true}
	url := start(t, s)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "m.gguf.partial"), body[:1000], 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Get(context.Background(), Source{URL: url + "/m.gguf", Name: "m.gguf"}, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Size != int64(len(body)) || !res.Verified {
		t.Errorf("result %+v, want the whole body verified", res)
	}
}

// TestGetCutMidFile: the connection drops halfway. Without retries Get
// fails with a sentence and keeps the partial (no model offered); the
// next Get resumes it. With a retry, one Get does both.
func TestGetCutMidFile(t *testing.T) {
	body := ggufBytes(t)
	for _, retries := range []int{0, 1} {
		t.Run(fmt.Sprint("retries=", retries), func(t *testing.T) {
			s := &server{body: body, etag: `"` + shaHex(body) + `"`, cutOnce: len(body) / 3}
			url := start(t, s)
			dir := t.TempDir()
			src := Source{URL: url + "/m.gguf", Name: "m.gguf"}
			_, err := Get(context.Background(), src, dir, Options{Retries: retries})
			if retries == 0 {
				if err == nil || !strings.Contains(err.Error(), "pull again to resume") {
					t.Fatalf("err %v, want the cut said", err)
				}
				if _, serr := os.Stat(filepath.Join(dir, "m.gguf")); serr == nil {
					t.Fatal("a cut download was offered as a model")
				}
				st, serr := os.Stat(filepath.Join(dir, "m.gguf.partial"))
				if serr != nil || st.Size() != int64(len(body)/3) {
					t.Fatalf("partial %v %v, want %d bytes kept", st, serr, len(body)/3)
				}
				_, err = Get(context.Background(), src, dir, Options{})
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(filepath.Join(dir, "m.gguf"))
			if !bytes.Equal(got, body) {
				t.Error("the resumed file differs from the served one")
			}
			if r := s.seen(); len(r) != 2 || r[1] != fmt.Sprintf("bytes=%d-", len(body)/3) {
				t.Errorf("ranges %q, want a resume from byte %d", r, len(body)/3)
			}
			if got := folderFiles(t, dir); len(got) != 1 {
				t.Errorf("folder holds %v, want the model alone", got)
			}
		})
	}
}

// TestGetWrongChecksum: the server publishes a SHA-256 the bytes do not
// have. The download is refused and deleted, partial included.
func TestGetWrongChecksum(t *testing.T) {
	body := ggufBytes(t)
	s := &server{body: body, etag: `"` + strings.Repeat("ab", 32) + `"`}
	url := start(t, s)
	dir := t.TempDir()
	_, err := Get(context.Background(), Source{URL: url + "/m.gguf", Name: "m.gguf"}, dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "does not match the SHA-256") {
		t.Fatalf("err %v, want the checksum refused", err)
	}
	if got := folderFiles(t, dir); len(got) != 0 {
		t.Errorf("folder holds %v after a refused download, want nothing", got)
	}
}

// TestGetNoETag: nothing to verify against; the file is still checked to
// be a GGUF and named, and the result says it was not verified.
func TestGetNoETag(t *testing.T) {
	body := ggufBytes(t)
	url := start(t, &server{body: body})
	dir := t.TempDir()
	res, err := Get(context.Background(), Source{URL: url + "/m.gguf", Name: "m.gguf"}, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verified {
		t.Error("verified without a published checksum")
	}
}

// TestGetNotGGUF: bytes that are not a GGUF are refused and deleted.
func TestGetNotGGUF(t *testing.T) {
	url := start(t, &server{body: []byte("<html>login</html>")})
	dir := t.TempDir()
	_, err := Get(context.Background(), Source{URL: url + "/m.gguf", Name: "m.gguf"}, dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "not a usable GGUF") {
		t.Fatalf("err %v, want the file refused", err)
	}
	if got := folderFiles(t, dir); len(got) != 0 {
		t.Errorf("folder holds %v, want nothing", got)
	}
}

// TestGet404: one sentence naming the URL and what to check.
func TestGet404(t *testing.T) {
	url := start(t, &server{status: http.StatusNotFound})
	dir := t.TempDir()
	_, err := Get(context.Background(), Source{URL: url + "/m.gguf", Name: "m.gguf"}, dir, Options{})
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, "404") || !strings.Contains(msg, url+"/m.gguf") || strings.Count(msg, ". ") > 0 || strings.Contains(msg, "\n") {
		t.Errorf("err %q, want one sentence naming the URL and 404", msg)
	}
	if got := folderFiles(t, dir); len(got) != 0 {
		t.Errorf("folder holds %v, want nothing", got)
	}
}

// TestGetHuggingFace: Hugging Face answers /OWNER/REPO/resolve/main/FILE
// with a redirect to its CDN carrying X-Linked-Etag (the LFS SHA-256) and
// X-Linked-Size; the CDN's own ETag is something else. The published
// checksum is the redirect's.
func TestGetHuggingFace(t *testing.T) {
	body := ggufBytes(t)
	for _, sum := range []string{shaHex(body), strings.Repeat("cd", 32)} {
		cdn := &server{body: body, etag: `"cdn-etag"`}
		cdnURL := start(t, cdn)
		hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/owner/repo/resolve/main/m.gguf" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("X-Linked-Etag", `"`+sum+`"`)
			w.Header().Set("X-Linked-Size", strconv.Itoa(len(body)))
			w.Header().Set("ETag", `W/"git-sha1"`)
			http.Redirect(w, r, cdnURL+"/blob", http.StatusFound)
		}))
		t.Cleanup(hub.Close)
		src, err := Resolve("owner/repo:m.gguf", hub.URL)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		res, err := Get(context.Background(), src, dir, Options{})
		if sum == shaHex(body) {
			if err != nil || !res.Verified {
				t.Errorf("right LFS sha: %+v, %v; want verified", res, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), "does not match") {
			t.Errorf("wrong LFS sha: err %v, want refused", err)
		}
	}
}

func TestResolve(t *testing.T) {
	for _, c := range []struct{ ref, url, name string }{
		{"hf.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf", "https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_k_m.gguf", "qwen2.5-0.5b-instruct-q4_k_m.gguf"},
		{"Qwen/Qwen2.5-0.5B-Instruct-GGUF:qwen2.5-0.5b-instruct-q4_k_m.gguf", "https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_k_m.gguf", "qwen2.5-0.5b-instruct-q4_k_m.gguf"},
		{"https://huggingface.co/o/r/blob/v2/sub/f.gguf", "https://huggingface.co/o/r/resolve/v2/sub/f.gguf", "f.gguf"},
		{"https://huggingface.co/o/r/resolve/main/f.gguf?download=true", "https://huggingface.co/o/r/resolve/main/f.gguf", "f.gguf"},
		{"http://127.0.0.1:8000/models/x.GGUF", "http://127.0.0.1:8000/models/x.GGUF", "x.GGUF"},
	} {
		src, err := Resolve(c.ref, "")
		if err != nil || src.URL != c.url || src.Name != c.name {
			t.Errorf("Resolve(%q) = %+v, %v; want %s as %s", c.ref, src, err, c.url, c.name)
		}
	}
	for _, ref := range []string{"", "llama3", "hf.co/owner/repo", "owner/repo:Q4_K_M", "https://example.com/model.bin", "hf.co/o/r/../x.gguf"} {
		if _, err := Resolve(ref, ""); err == nil {
			t.Errorf("Resolve(%q) accepted", ref)
		} else if !strings.Contains(err.Error(), "give the URL") {
			t.Errorf("Resolve(%q): %v, want what to give", ref, err)
		}
	}
}

// TestSave: a file added from a reader (a drop on the window) is named
// once whole and a GGUF; a short one, a non-GGUF and a name taken are
// refused, leaving nothing half-written.
func TestSave(t *testing.T) {
	body := ggufBytes(t)
	dir := t.TempDir()
	res, err := Save(bytes.NewReader(body), dir, "dropped.gguf", int64(len(body)), nil)
	if err != nil || res.Size != int64(len(body)) {
		t.Fatalf("Save: %+v, %v", res, err)
	}
	if _, err := Save(bytes.NewReader(body), dir, "dropped.gguf", int64(len(body)), nil); err == nil || !strings.Contains(err.Error(), "already has a file named dropped.gguf") {
		t.Errorf("a taken name: %v", err)
	}
	if _, err := Save(bytes.NewReader(body[:100]), dir, "short.gguf", int64(len(body)), nil); err == nil {
		t.Error("a short file was added")
	}
	if _, err := Save(strings.NewReader("not a model"), dir, "text.gguf", -1, nil); err == nil || !strings.Contains(err.Error(), "not a usable GGUF") {
		t.Errorf("a text file: %v", err)
	}
	if _, err := Save(strings.NewReader("x"), dir, "notes.txt", 1, nil); err == nil {
		t.Error("a .txt was added")
	}
	if got := folderFiles(t, dir); len(got) != 1 || got[0] != "dropped.gguf" {
		t.Errorf("folder holds %v, want dropped.gguf alone", got)
	}
}
