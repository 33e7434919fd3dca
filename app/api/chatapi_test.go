package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"homering/app/api/apitype"
	"homering/app/problem"
)

// TestChatAPIListener: the compatible APIs' own port serves them and
// nothing else (the control API and the UI stay on the agent's address),
// and the Status says where they listen, or why they do not.
func TestChatAPIListener(t *testing.T) {
	var chatAPI *httptest.Server
	srv, _, _ := uiServerWith(t, nil, func(s *Server) {
		s.ChatAPI = "http://127.0.0.1:47471"
		chatAPI = httptest.NewServer(s.ChatAPIHandler())
		t.Cleanup(chatAPI.Close)
	})
	var models struct {
		Object string `json:"object"`
	}
	if code := do(t, chatAPI, "GET", "/v1/models", nil, &models); code != 200 || models.Object != "list" {
		t.Errorf("GET /v1/models on the chat API's port = %d %+v, want 200 and a list", code, models)
	}
	var e apitype.Error
	for _, path := range []string{"/api/v1/status", "/index.html", "/api/v1/settings"} {
		if code := do(t, chatAPI, "GET", path, nil, &e); code != 404 {
			t.Errorf("GET %s on the chat API's port = %d, want 404 (the control API is not there)", path, code)
		}
	}
	// Ollama's probe, as Ollama answers it; the UI stays on the agent's
	// address.
	for _, method := range []string{"GET", "HEAD"} {
		req, _ := http.NewRequest(method, chatAPI.URL+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if want := map[string]string{"GET": "Ollama is running", "HEAD": ""}[method]; resp.StatusCode != 200 || string(b) != want {
			t.Errorf("%s / on the chat API's port = %d %q, want 200 %q", method, resp.StatusCode, b, want)
		}
	}
	if resp, err := http.Get(srv.URL + "/"); err != nil || resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("GET / on the agent's address: %v %v, want the UI's page", resp, err)
	} else {
		_ = resp.Body.Close()
	}
	var st apitype.Status
	if do(t, srv, "GET", "/api/v1/status", nil, &st) != 200 || st.ChatAPI != "http://127.0.0.1:47471" {
		t.Errorf("status chat_api = %q, want http://127.0.0.1:47471", st.ChatAPI)
	}
	if st.Goroutines < 2 { // at least the test's and the server's
		t.Errorf("status goroutines = %d, want this process's count", st.Goroutines)
	}

	taken := problem.Make(problem.ChatAPIPort, "Port 47471 of the OpenAI, Anthropic and Ollama compatible APIs is taken by another program; choose another in Settings (API port) or start Homering with --api-port N.")
	srv, _, _ = uiServerWith(t, nil, func(s *Server) { s.ChatAPIProblem = &taken })
	st = apitype.Status{}
	if do(t, srv, "GET", "/api/v1/status", nil, &st) != 200 || st.ChatAPI != "" ||
		!slices.ContainsFunc(st.Problems, func(p apitype.Problem) bool { return p == taken }) {
		t.Errorf("status with the port taken: chat_api %q, problems %+v; want none and the problem", st.ChatAPI, st.Problems)
	}
}

// fakeListener records what postSettings asks of the chat API's listener.
type fakeListener struct {
	mu    sync.Mutex
	calls []bool
}

func (f *fakeListener) State() (string, *apitype.Problem) { return "http://127.0.0.1:47471", nil }
func (f *fakeListener) Shared() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls) > 0 && f.calls[len(f.calls)-1]
}
func (f *fakeListener) SetExpose(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, on)
}

// TestSettingsRebindChatAPI: saving a change of sharing rebinds the chat
// API's listener at once (no restart), and only such a change does.
func TestSettingsRebindChatAPI(t *testing.T) {
	l := &fakeListener{}
	srv, _, _ := uiServerWith(t, nil, func(s *Server) { s.ChatListener = l })
	var st apitype.Settings
	if code := do(t, srv, "GET", "/api/v1/settings", nil, &st); code != 200 {
		t.Fatalf("GET settings: %d", code)
	}
	save := func(change func(*apitype.Settings)) {
		t.Helper()
		change(&st)
		if code := do(t, srv, "POST", "/api/v1/settings", st, &st); code != 200 {
			t.Fatalf("POST settings %+v: %d", st, code)
		}
	}
	save(func(s *apitype.Settings) { s.Expose, s.APIKey = true, "0123456789abcdef" })
	var status apitype.Status
	if do(t, srv, "GET", "/api/v1/status", nil, &status) != 200 || !status.ChatAPIShared {
		t.Errorf("status chat_api_shared %v while shared, want true", status.ChatAPIShared)
	}
	save(func(s *apitype.Settings) { s.ContextTokens = 1024 })        // no change of sharing
	save(func(s *apitype.Settings) { s.APIKey = "fedcba9876543210" }) // a new key: read per request
	save(func(s *apitype.Settings) { s.Expose = false })
	status = apitype.Status{} // omitempty: a false chat_api_shared is absent from the reply
	if do(t, srv, "GET", "/api/v1/status", nil, &status) != 200 || status.ChatAPI != "http://127.0.0.1:47471" || status.ChatAPIShared {
		t.Errorf("status chat_api %q shared %v, want the listener's, not shared", status.ChatAPI, status.ChatAPIShared)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if want := []bool{true, false}; !slices.Equal(l.calls, want) {
		t.Errorf("SetExpose calls %v, want %v", l.calls, want)
	}
}
