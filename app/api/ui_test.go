package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/app/agent"
	"homering/app/api/apitype"
	"homering/app/config"
	"homering/engine/profile"
	"homering/engine/profile/sysinfo"
)

// storiesModel is a real, trained GGUF (llama architecture, f32, 5 layers).
var storiesModel, _ = filepath.Abs("../../../shared/models/stories260K.gguf")

// uiServer runs a node and the API on loopback, with HOME pointed at a
// fresh folder so model scanning sees only what a test puts there.
func uiServer(t *testing.T) (*httptest.Server, string, string) {
	t.Helper()
	return uiServerWith(t, nil, func(*Server) {})
}

// uiServerWith is uiServer with a chance to set the agent's options (opts,
// if not nil) and then the Server's fields first.
func uiServerWith(t *testing.T, opts func(*agent.Options), set func(*Server)) (*httptest.Server, string, string) {
	t.Helper()
	dir, home := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	n, _, log := testNode(t, dir)
	runNode(t, n)
	s := &Server{Agent: testAgent(t, n, dir, log, opts), Log: log, Token: "secret"}
	set(s)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close) // before the node stops: cleanups run last first
	return srv, dir, home
}

// liveEvents opens GET /api/v1/live on srv (with the token cookie) for at
// most timeout and returns a function that reads its next snapshot,
// failing t when the stream ends first.
func liveEvents(t *testing.T, srv *httptest.Server, timeout time.Duration) func() apitype.Live {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/live", nil)
	req.AddCookie(&http.Cookie{Name: TokenCookie, Value: "secret"})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	res, err := srv.Client().Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	return func() apitype.Live {
		t.Helper()
		for sc.Scan() {
			if b, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var l apitype.Live
				if err := json.Unmarshal([]byte(b), &l); err != nil {
					t.Fatal(err)
				}
				return l
			}
		}
		t.Fatalf("live stream ended: %v", sc.Err())
		return apitype.Live{}
	}
}

// do sends a request with the token cookie (as the browser does) unless
// noAuth, and decodes a JSON answer into out when non-nil.
func do(t *testing.T, srv *httptest.Server, method, path string, body any, out any) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(method, srv.URL+path, r)
	req.AddCookie(&http.Cookie{Name: TokenCookie, Value: "secret"})
	return send(t, srv, req, out).StatusCode
}

// send sends req to srv and decodes its JSON answer into out (when not
// nil); the answer's body is read and closed.
func send(t *testing.T, srv *httptest.Server, req *http.Request, out any) *http.Response {
	t.Helper()
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", req.Method, req.URL.Path, err, b)
		}
	}
	return res
}

func TestUIAuth(t *testing.T) {
	srv, _, _ := uiServer(t)
	noRedirect := *srv.Client()
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	get := func(path string, cookie string) *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: TokenCookie, Value: cookie})
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		return res
	}
	tests := []struct {
		name, path, cookie string
		want               int
	}{
		{"app shell needs no token", "/", "", http.StatusOK},
		{"API without token", "/api/v1/status", "", http.StatusUnauthorized},
		{"API with wrong cookie", "/api/v1/status", "guess", http.StatusUnauthorized},
		{"API with cookie", "/api/v1/status", "secret", http.StatusOK},
		{"unknown asset is not public", "/assets/nothing.js", "", http.StatusUnauthorized},
		{"wrong token link", "/?token=guess", "", http.StatusUnauthorized},
		{"token link", "/?token=secret", "", http.StatusSeeOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := get(tt.path, tt.cookie).StatusCode; got != tt.want {
				t.Errorf("GET %s = %d, want %d", tt.path, got, tt.want)
			}
		})
	}
	res := get("/?token=secret", "")
	var c *http.Cookie
	for _, k := range res.Cookies() {
		if k.Name == TokenCookie {
			c = k
		}
	}
	if c == nil || c.Value != "secret" || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || res.Header.Get("Location") != "/" {
		t.Errorf("token link: cookie %+v, Location %q; want HttpOnly SameSite=Strict cookie and a redirect to /", c, res.Header.Get("Location"))
	}
}

// TestControlMisses: with the token, an unknown control API path is a
// 404 and a known one's other method a 405 with Allow, both as
// apitype.Error; without the token both stay 401, as every control path.
func TestControlMisses(t *testing.T) {
	srv, _, _ := uiServer(t)
	var e apitype.Error
	if code := do(t, srv, "GET", "/api/v1/nothing", nil, &e); code != 404 || e.Error != "/api/v1/nothing is not a control API path; the package doc of app/api lists them." {
		t.Errorf("GET /api/v1/nothing = %d %q, want 404 and a sentence", code, e.Error)
	}
	req, _ := http.NewRequest("DELETE", srv.URL+"/api/v1/settings", nil)
	req.AddCookie(&http.Cookie{Name: TokenCookie, Value: "secret"})
	e = apitype.Error{}
	res := send(t, srv, req, &e)
	if res.StatusCode != 405 || res.Header.Get("Allow") != "GET, HEAD, POST" || e.Error != "DELETE /api/v1/settings is not allowed; use GET, HEAD or POST." {
		t.Errorf("DELETE /api/v1/settings = %d Allow %q %q, want 405 with Allow GET, HEAD, POST", res.StatusCode, res.Header.Get("Allow"), e.Error)
	}
	req, _ = http.NewRequest("GET", srv.URL+"/api/v1/nothing", nil)
	if res := send(t, srv, req, nil); res.StatusCode != 401 {
		t.Errorf("GET /api/v1/nothing without the token = %d, want 401", res.StatusCode)
	}
}

func TestUISettings(t *testing.T) {
	srv, dir, _ := uiServer(t)
	var s apitype.Settings
	if do(t, srv, "GET", "/api/v1/settings", nil, &s) != 200 || s.ContextTokens != config.DefaultContextTokens || s.Name != "box" || s.RingKeepSeconds != config.DefaultRingKeepSeconds || s.APIPort != 47471 {
		t.Fatalf("defaults: %+v", s)
	}
	bad := []struct {
		name string
		s    apitype.Settings
		want string
	}{
		{"tiny context", apitype.Settings{ContextTokens: 10}, "context length"},
		{"missing folder", apitype.Settings{ContextTokens: 4096, ModelDir: "/does/not/exist"}, "does not exist"},
		{"exposed without key", apitype.Settings{ContextTokens: 4096, Expose: true}, "API key"},
		{"negative budget", apitype.Settings{ContextTokens: 4096, MemoryBudget: -1}, "negative"},
		{"negative keep time", apitype.Settings{ContextTokens: 4096, RingKeepSeconds: -1}, "Keeping the ring ready for -1 seconds after a chat is outside 0-3600"},
		{"keep time over an hour", apitype.Settings{ContextTokens: 4096, RingKeepSeconds: 3601}, "outside 0-3600"},
		{"gpu neither on nor off", apitype.Settings{ContextTokens: 4096, GPU: "maybe"}, "give on or off"},
		{"API port not a port", apitype.Settings{ContextTokens: 4096, APIPort: 70000}, "The API port 70000 is not a TCP port"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			var e apitype.Error
			if code := do(t, srv, "POST", "/api/v1/settings", tt.s, &e); code != 400 || !strings.Contains(e.Error, tt.want) {
				t.Errorf("POST = %d %q, want 400 mentioning %q", code, e.Error, tt.want)
			}
		})
	}
	want := apitype.Settings{Name: "kitchen", ModelDir: t.TempDir(), Model: storiesModel, ContextTokens: 2048, MemoryBudget: 1 << 30, Expose: true, APIKey: "0123456789abcdef0", RingKeepSeconds: 30, GPU: "off", APIPort: 8765}
	var got apitype.Settings
	if do(t, srv, "POST", "/api/v1/settings", want, &got) != 200 {
		t.Fatalf("POST valid settings: %+v", got)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("saved settings (-want +got):\n%s", diff)
	}
	disk, err := LoadSettings(dir)
	want.Name = ""
	if err != nil || cmp.Diff(want, disk) != "" {
		t.Errorf("settings.json (-want +got):\n%s (%v)", cmp.Diff(want, disk), err)
	}
	if cfg, err := config.Load(dir); err != nil || cfg.Name != "kitchen" {
		t.Errorf("config.json name = %q, %v; want kitchen", cfg.Name, err)
	}
}

// settingsSpy is a Chatter told of saved settings changes.
type settingsSpy struct {
	scripted
	mu      sync.Mutex
	changes [][2]apitype.Settings
}

func (s *settingsSpy) SettingsChanged(before, after apitype.Settings) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changes = append(s.changes, [2]apitype.Settings{before, after})
}

// A saved change reaches the chat backend with the settings before and
// after (the agent's ends a ring job it keeps when the model, the context
// or the keep time changes: app/agent/chat.go); a refused one does not. A client
// that does not send the keep time or the API port (or sends port 0: a Go
// client that predates it) leaves them as they were.
func TestUISettingsReachTheChat(t *testing.T) {
	spy := &settingsSpy{}
	srv, _, _ := uiServerWith(t, nil, func(s *Server) { s.Chat = spy })
	first := apitype.Settings{Model: storiesModel, ContextTokens: 2048, RingKeepSeconds: 60}
	if code := do(t, srv, "POST", "/api/v1/settings", first, nil); code != 200 {
		t.Fatalf("POST = %d", code)
	}
	var got apitype.Settings
	if code := do(t, srv, "POST", "/api/v1/settings", map[string]any{"model": "other.gguf", "context_tokens": 1024}, &got); code != 200 || got.RingKeepSeconds != 60 {
		t.Fatalf("POST without the keep time = %d %+v, want it kept at 60 s", code, got)
	}
	if code := do(t, srv, "POST", "/api/v1/settings", apitype.Settings{ContextTokens: 10}, nil); code != 400 {
		t.Fatalf("POST of a bad context = %d, want 400", code)
	}
	want := [][2]apitype.Settings{
		{{Name: "box", ContextTokens: config.DefaultContextTokens, RingKeepSeconds: config.DefaultRingKeepSeconds, APIPort: config.DefaultAPIPort}, {Name: "box", Model: storiesModel, ContextTokens: 2048, RingKeepSeconds: 60, APIPort: config.DefaultAPIPort}},
		{{Name: "box", Model: storiesModel, ContextTokens: 2048, RingKeepSeconds: 60, APIPort: config.DefaultAPIPort}, {Name: "box", Model: "other.gguf", ContextTokens: 1024, RingKeepSeconds: 60, APIPort: config.DefaultAPIPort}},
	}
	spy.mu.Lock()
	defer spy.mu.Unlock()
	if diff := cmp.Diff(want, spy.changes); diff != "" {
		t.Errorf("changes the chat was told of (-want +got)\n%s", diff)
	}
}

// What this computer's disk refuses (settings.json or the conversations
// folder unusable) is a problem of the agent's: 500 with one sentence that
// names the file, never 502 (no other device failed) nor a package prefix.
func TestUIDiskFailures(t *testing.T) {
	srv, dir, _ := uiServer(t)
	// A folder where a file should be, and a file where a folder should be:
	// unreadable and unwritable even for root.
	if err := os.Mkdir(filepath.Join(dir, "settings.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ConversationsDir), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, path string
		body         any
		says         string
	}{
		{"GET", "/api/v1/settings", nil, "settings.json cannot be read"},
		{"GET", "/api/v1/models", nil, "settings.json cannot be read"},
		{"GET", "/api/v1/plan", nil, "settings.json cannot be read"},
		{"POST", "/api/v1/settings", apitype.Settings{Name: "box", ContextTokens: 256}, "settings.json"},
		{"GET", "/api/v1/conversations", nil, ConversationsDir},
		{"PUT", "/api/v1/conversations/abc", apitype.Conversation{}, ConversationsDir},
	} {
		var e apitype.Error
		code := do(t, srv, tc.method, tc.path, tc.body, &e)
		if code != http.StatusInternalServerError || !strings.Contains(e.Error, tc.says) || !strings.HasSuffix(e.Error, ".") ||
			strings.Contains(e.Error, "config: ") || strings.ToUpper(e.Error[:1]) != e.Error[:1] {
			t.Errorf("%s %s: %d %q, want 500 and one sentence naming %s", tc.method, tc.path, code, e.Error, tc.says)
		}
	}
}

func TestUIConversations(t *testing.T) {
	srv, dir, _ := uiServer(t)
	c := apitype.Conversation{System: "be brief", Messages: []apitype.ConversationMessage{{Role: "user", Content: "Tell me   a story about a very small dragon who lives in a teapot"}, {Role: "assistant", Content: "Once"}}}
	var saved apitype.Conversation
	if do(t, srv, "PUT", "/api/v1/conversations/abc", c, &saved) != 200 || saved.Title != "Tell me a story about a very small dragon who…" {
		t.Fatalf("PUT: %+v", saved)
	}
	if _, err := os.Stat(filepath.Join(dir, ConversationsDir, "abc.json")); err != nil {
		t.Errorf("not on disk: %v", err)
	}
	saved.Title = "Dragon"
	do(t, srv, "PUT", "/api/v1/conversations/abc", saved, nil)
	do(t, srv, "PUT", "/api/v1/conversations/def", apitype.Conversation{}, nil)
	var list []apitype.ConversationSummary
	do(t, srv, "GET", "/api/v1/conversations", nil, &list)
	if len(list) != 2 || list[0].ID != "def" || list[1].Title != "Dragon" || list[1].Messages != 2 {
		t.Errorf("list = %+v, want def (newest, New chat) then abc (Dragon, 2 messages)", list)
	}
	var e apitype.Error
	// One sentence, with no package prefix.
	if code := do(t, srv, "GET", "/api/v1/conversations/..%2Fconfig", nil, &e); code != 400 ||
		e.Error != `The conversation "../config" is not a conversation ID (letters, digits, - and _, at most 64).` {
		t.Errorf("path-like ID: %d %q, want 400", code, e.Error)
	}
	do(t, srv, "DELETE", "/api/v1/conversations/abc", nil, nil)
	if code := do(t, srv, "GET", "/api/v1/conversations/abc", nil, &e); code != 404 || e.Error != "That conversation does not exist (deleted elsewhere?); pick another." {
		t.Errorf("after delete: %d %q, want 404", code, e.Error)
	}
}

// writeStores lays out in home the stores of Ollama (manifest → blob),
// LM Studio and the Hugging Face cache (snapshot symlink → blob), each
// with a copy of the real GGUF data, and a broken file in LM Studio's. It
// returns the Ollama blob's path.
func writeStores(t *testing.T, home string, data []byte) string {
	t.Helper()
	write := func(p string, b []byte) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	digest := "sha256:0123abcd"
	blob := filepath.Join(home, ".ollama/models/blobs/sha256-0123abcd")
	write(blob, data)
	write(filepath.Join(home, ".ollama/models/manifests/registry.ollama.ai/library/stories/260k"),
		[]byte(`{"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"`+digest+`"},{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:ff"}]}`))
	write(filepath.Join(home, ".lmstudio/models/me/tiny/tiny-f32.gguf"), data)
	hfBlob := filepath.Join(home, ".cache/huggingface/hub/models--me--tiny/blobs/beef")
	write(hfBlob, data)
	link := filepath.Join(home, ".cache/huggingface/hub/models--me--tiny/snapshots/1/tiny.gguf")
	_ = os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink(hfBlob, link); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(home, ".lmstudio/models/me/broken/broken.gguf"), []byte("GGUF not really"))
	return blob
}

// TestUIModels finds the real GGUF in every store (writeStores).
func TestUIModels(t *testing.T) {
	srv, _, home := uiServer(t)
	data, err := os.ReadFile(storiesModel)
	if err != nil {
		t.Fatal(err)
	}
	writeStores(t, home, data)

	var m apitype.Models
	if do(t, srv, "GET", "/api/v1/models", nil, &m) != 200 {
		t.Fatalf("GET models: %+v", m)
	}
	got := map[string]apitype.Model{}
	for _, x := range m.Models {
		got[x.Source+" "+filepath.Base(x.Path)] = x
	}
	if n := got["ollama sha256-0123abcd"].Name; n != "stories:260k" {
		t.Errorf("Ollama model named %q, want stories:260k (as ollama list shows it)", n)
	}
	for _, k := range []string{"ollama sha256-0123abcd", "lmstudio tiny-f32.gguf", "huggingface tiny.gguf"} {
		x, ok := got[k]
		if !ok {
			t.Errorf("%s not found in %+v", k, m.Models)
			continue
		}
		if x.Arch != "llama" || x.Quant != "f32" || x.Layers != 5 || x.Size != int64(len(data)) || x.Fit != "fits" {
			t.Errorf("%s = %+v, want llama f32 5 layers, %d bytes, fits", k, x, len(data))
		}
	}
	if b := got["lmstudio broken.gguf"]; b.Fit != "unknown" || b.Error == "" {
		t.Errorf("broken file = %+v, want fit unknown with an error sentence", b)
	}
}

func TestUIPlanAndLive(t *testing.T) {
	srv, _, _ := uiServer(t)
	var p apitype.Plan
	do(t, srv, "GET", "/api/v1/plan", nil, &p)
	if p.Problem == nil || p.Problem.Code != "no_model" || len(p.Devices) != 1 || !p.Devices[0].Self {
		t.Errorf("plan without a model = %+v, want only this device and a no_model problem", p)
	}
	// A file that is no model: the problem says to choose another, not to
	// add devices.
	broken := filepath.Join(t.TempDir(), "broken.gguf")
	if err := os.WriteFile(broken, []byte("GGUF not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	do(t, srv, "POST", "/api/v1/settings", apitype.Settings{Name: "box", Model: broken, ContextTokens: 256}, nil)
	p = apitype.Plan{}
	do(t, srv, "GET", "/api/v1/plan", nil, &p)
	if p.Problem == nil || p.Problem.Code != "model_unreadable" || p.Layers != 0 || !strings.Contains(p.Problem.Fix, "another model") {
		t.Errorf("plan of a broken file: problem %+v, %d layers; want model_unreadable with a fix naming another model", p.Problem, p.Layers)
	}
	do(t, srv, "POST", "/api/v1/settings", apitype.Settings{Name: "box", Model: storiesModel, ContextTokens: 256}, nil)
	p = apitype.Plan{}
	do(t, srv, "GET", "/api/v1/plan", nil, &p)
	if p.Problem != nil || p.Layers != 5 || p.K < 1 || len(p.Devices) != 1 {
		t.Fatalf("plan = %+v", p)
	}
	d := p.Devices[0]
	covered := 0
	for _, w := range d.Windows {
		covered += w.End - w.Start
	}
	if d.Role != "head" || !d.InRing || covered != 5 || d.PredictedMs <= 0 || len(d.Memory) == 0 || d.MeasuredMs != nil {
		t.Errorf("head = %+v, want the head running all 5 layers, a prediction, a memory reading, nothing measured", d)
	}

	next := liveEvents(t, srv, 10*time.Second)
	events := []apitype.Live{next(), next()} // a snapshot at once, then a heartbeat
	if events[0].Plan.Layers != 5 || events[0].Status.Device.Name != "box" {
		t.Fatalf("live: %d events (want a snapshot at once and a heartbeat): %+v", len(events), events)
	}
	if events[0].Work == nil {
		t.Errorf("live work is null; want [] (the UI reads a list)")
	}
	if n0, n1 := len(events[0].Plan.Devices[0].Memory), len(events[1].Plan.Devices[0].Memory); n1 <= n0 {
		t.Errorf("heartbeat memory history %d → %d, want it to grow", n0, n1)
	}
}

// The device map and the fit labels plan this device with its cached
// measured profile (engine/profile.LoadCached, tested there against real
// cache files) when there is one, and say so.
func TestUIPlanUsesMeasuredProfile(t *testing.T) {
	flops := map[string]float64{}
	for k, v := range profile.Unmeasured("x", 1, 1).CPUFlops {
		flops[k] = v * 10
	}
	fast := profile.Profile{OS: "linux", CPUFlops: flops, CPUReadBytesPerSec: 100e9,
		Memory: sysinfo.Memory{Total: 16 << 30, Available: 12 << 30}, Disk: sysinfo.Disk{SeqBytesPerSec: 2e9, RandBytesPerSec: 1e9},
		CPUVariant: "haswell"}
	// Plans take the profile's speeds and the memory as it is now (a
	// profile's memory is as it was when measured): short of memory is
	// this device's reading.
	small := sysinfo.Memory{Total: 1 << 30, Available: 2900 << 10} // room for the 2.2 MiB compute buffer, not all 1.1 MiB of weights
	tests := []struct {
		name    string
		load    func(string) (profile.Profile, bool, error)
		mem     *sysinfo.Memory
		profile string
		fit     string
	}{
		{"none cached", func(string) (profile.Profile, bool, error) { return profile.Profile{}, false, nil }, nil, "default", "fits"},
		{"unreadable cache", func(string) (profile.Profile, bool, error) {
			return profile.Profile{}, false, errors.New("disk on fire")
		}, nil, "default", "fits"},
		{"fast machine", func(string) (profile.Profile, bool, error) { return fast, true, nil }, nil, "measured", "fits"},
		{"short of memory", func(string) (profile.Profile, bool, error) { return fast, true, nil }, &small, "measured", "tight"},
	}
	models := t.TempDir()
	if err := os.Symlink(storiesModel, filepath.Join(models, "stories260K.gguf")); err != nil {
		t.Fatal(err)
	}
	predicted := map[string]float64{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked []string
			srv, dir, _ := uiServerWith(t, func(o *agent.Options) {
				o.LoadProfile = func(d string) (profile.Profile, bool, error) { asked = append(asked, d); return tt.load(d) }
				if tt.mem != nil {
					o.ReadMemory = func() (sysinfo.Memory, error) { return *tt.mem, nil }
				}
			}, func(*Server) {})
			do(t, srv, "POST", "/api/v1/settings", apitype.Settings{Name: "box", ModelDir: models, Model: storiesModel, ContextTokens: 256}, nil)
			var p apitype.Plan
			do(t, srv, "GET", "/api/v1/plan", nil, &p)
			if p.Problem != nil || len(p.Devices) != 1 {
				t.Fatalf("plan = %+v, problem %+v", p, p.Problem)
			}
			d := p.Devices[0]
			t.Logf("predicted %.4f ms/token, case %s", d.PredictedMs, d.Case)
			if d.Profile != tt.profile || d.PredictedMs <= 0 {
				t.Errorf("this device planned with profile %q predicting %v ms, want %q and a prediction", d.Profile, d.PredictedMs, tt.profile)
			}
			predicted[tt.name] = d.PredictedMs
			// The map says which CPU kernels the measured profile ran on.
			if want := map[string]string{"measured": "haswell"}[tt.profile]; d.CPUVariant != want {
				t.Errorf("the map's CPU variant is %q, want %q", d.CPUVariant, want)
			}
			var ms apitype.Models
			do(t, srv, "GET", "/api/v1/models", nil, &ms)
			if len(ms.Models) != 1 || ms.Models[0].Fit != tt.fit {
				t.Errorf("models = %+v, want stories260K labelled %q", ms.Models, tt.fit)
			}
			if len(asked) != 1 || asked[0] != dir {
				t.Errorf("profile read for %q, want once (cached) for the config dir %q", asked, dir)
			}
		})
	}
	if f, d := predicted["fast machine"], predicted["none cached"]; !(f < d) {
		t.Errorf("predicted %v ms/token with a 10× faster measured CPU, %v with the default: want less", f, d)
	}
}

// Work reported to the server reaches the live stream (soon after the
// change; the heartbeat would also carry it) and leaves it when it ends.
func TestLiveCarriesWork(t *testing.T) {
	var srvAPI *Server
	srv, _, _ := uiServerWith(t, nil, func(s *Server) { srvAPI = s })
	next := liveEvents(t, srv, 20*time.Second)
	if l := next(); len(l.Work) != 0 {
		t.Fatalf("work before any = %+v", l.Work)
	}
	srvAPI.Agent.Work().Begin(time.Now(), "transfer:b", "transfer", "Weights to b", "", 0)
	srvAPI.Agent.Work().Progress(time.Now(), "transfer:b", 5, 10)
	var got []apitype.Task
	for range 5 {
		if got = next().Work; len(got) == 1 && got[0].Done == 5 {
			break
		}
	}
	if len(got) != 1 || got[0].ID != "transfer:b" || got[0].Done != 5 || got[0].Total != 10 {
		t.Fatalf("work in the stream = %+v, want the transfer at 5 of 10", got)
	}
	srvAPI.Agent.Work().End("transfer:b")
	for range 5 {
		if got = next().Work; len(got) == 0 {
			return
		}
	}
	t.Errorf("work after End = %+v, want none", got)
}

// calibrating keeps calibration ratios, as the agent learns them from its
// runs (app/agent/profile_calib.go), for the agent's planner.
type calibrating struct {
	scripted
	ratios map[string][]float64 // by device ID; set before the server runs
	mu     sync.Mutex
	asked  []string // models asked for
}

func (c *calibrating) CalibrationRatios(model string, ids []string) map[string][]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, model)
	out := map[string][]float64{}
	for _, id := range ids {
		if r, ok := c.ratios[id]; ok {
			out[id] = r
		}
	}
	return out
}

// The device map plans with the devices calibrated by the agent's
// ratios and shows the uncalibrated prediction beside.
func TestUIPlanCalibrated(t *testing.T) {
	tests := []struct {
		name  string
		ratio []float64 // this device's; nil: none kept
		want  float64   // predicted over uncalibrated
	}{
		{name: "no runs kept", want: 1},
		{name: "measured twice as slow", ratio: []float64{2, 2.1, 1.9}, want: 2},
		{name: "measured faster", ratio: []float64{0.5}, want: 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &calibrating{ratios: map[string][]float64{}}
			srv, _, _ := uiServerWith(t, func(o *agent.Options) { o.Ratios = c.CalibrationRatios }, func(s *Server) {
				s.Chat = c
				if tt.ratio != nil {
					c.ratios[s.Agent.Status().Device.ID.String()] = tt.ratio
				}
			})
			do(t, srv, "POST", "/api/v1/settings", apitype.Settings{Name: "box", Model: storiesModel, ContextTokens: 256}, nil)
			var p apitype.Plan
			do(t, srv, "GET", "/api/v1/plan", nil, &p)
			if p.Problem != nil || len(p.Devices) != 1 || p.PredictedMs <= 0 {
				t.Fatalf("plan = %+v, problem %+v", p, p.Problem)
			}
			c.mu.Lock()
			if len(c.asked) == 0 || c.asked[0] != storiesModel {
				t.Errorf("ratios asked for %q, want the selected model", c.asked)
			}
			c.mu.Unlock()
			d := p.Devices[0]
			if tt.ratio == nil {
				if p.UncalibratedMs != 0 || d.UncalibratedMs != 0 {
					t.Errorf("uncalibrated %v / %v ms without ratios, want 0 (the prediction is not calibrated)", p.UncalibratedMs, d.UncalibratedMs)
				}
				return
			}
			if got := p.PredictedMs / p.UncalibratedMs; math.Abs(got-tt.want) > 0.02*tt.want {
				t.Errorf("predicted %.4f ms over uncalibrated %.4f = %.3f, want %.3f", p.PredictedMs, p.UncalibratedMs, got, tt.want)
			}
			if d.UncalibratedMs <= 0 || d.PredictedMs != p.PredictedMs {
				t.Errorf("this device: predicted %v, uncalibrated %v; want the plan's and a raw one", d.PredictedMs, d.UncalibratedMs)
			}
		})
	}
}
