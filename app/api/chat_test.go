package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/app/api/apitype"
	"homering/app/api/client"
	"homering/app/problem"
)

// scripted is a Chatter that streams fixed tokens, or blocks until stopped.
// The real one (app/agent/chat.go over engine/runner) is driven by app/apptest.
type scripted struct {
	tokens []string
	err    error
	block  bool // wait for StopChat or ctx before finishing

	mu      sync.Mutex
	got     []apitype.ChatRequest
	cancels map[string]context.CancelFunc
	started chan struct{}
}

func (s *scripted) Chat(ctx context.Context, req apitype.ChatRequest, emit func(string) error) (apitype.ChatStats, error) {
	s.mu.Lock()
	s.got = append(s.got, req)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if s.cancels == nil {
		s.cancels = map[string]context.CancelFunc{}
	}
	s.cancels[req.ConversationID] = cancel
	s.mu.Unlock()
	for _, t := range s.tokens {
		if err := emit(t); err != nil {
			return apitype.ChatStats{}, err
		}
	}
	if s.err != nil {
		return apitype.ChatStats{}, s.err
	}
	if s.block {
		close(s.started)
		<-ctx.Done()
		return apitype.ChatStats{CompletionTokens: len(s.tokens), StopReason: "cancelled"}, nil
	}
	return apitype.ChatStats{PromptTokens: 3, CompletionTokens: len(s.tokens), StopReason: "length", Model: "tiny"}, nil
}

func (s *scripted) StopChat(conv string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.cancels[conv]; ok {
		c()
		return 1
	}
	return 0
}

func (s *scripted) Served() []apitype.ServedModel {
	return []apitype.ServedModel{{Name: "tiny", Size: 1}}
}
func (s *scripted) Running() int { return 0 }

func newChatServer(t *testing.T, chat Chatter, apiKey string) (*httptest.Server, *client.Client, http.Handler) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir()) // the model stores the compatible APIs list: none but the test's
	n, _, log := testNode(t, dir)
	s := &Server{Agent: testAgent(t, n, dir, log, nil), Log: log, Token: "secret", Chat: chat}
	if apiKey != "" {
		s.APIKey = func() string { return apiKey }
	}
	h := s.Handler()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, &client.Client{Info: apitype.Info{URL: srv.URL, Token: "secret"}, HTTP: srv.Client()}, h
}

func TestChatStream(t *testing.T) {
	sc := &scripted{tokens: []string{"Once", " upon", " a time"}}
	_, c, _ := newChatServer(t, sc, "")
	var got []string
	st, err := c.Chat(context.Background(), apitype.ChatRequest{Messages: []apitype.ChatMessage{{Role: "user", Content: "Hi"}}, MaxTokens: 3}, func(s string) { got = append(got, s) })
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Once", " upon", " a time"}, got); diff != "" {
		t.Errorf("tokens (-want +got):\n%s", diff)
	}
	if st.CompletionTokens != 3 || st.StopReason != "length" {
		t.Errorf("stats %+v", st)
	}
	if sc.got[0].MaxTokens != 3 || sc.got[0].Messages[0].Content != "Hi" {
		t.Errorf("the Chatter got %+v", sc.got[0])
	}

	// A failure worded by the Chatter arrives as the error event's sentence.
	_, c2, _ := newChatServer(t, &scripted{tokens: []string{"a"}, err: problem.New(problem.EngineDied, "The engine stopped unexpectedly.")}, "")
	_, err = c2.Chat(context.Background(), apitype.ChatRequest{Prompt: "x"}, func(string) {})
	if err == nil || err.Error() != "The engine stopped unexpectedly." {
		t.Errorf("error event: %v", err)
	}

	// Without a Chatter, chat says how to get one.
	_, c3, _ := newChatServer(t, nil, "")
	if _, err := c3.Chat(context.Background(), apitype.ChatRequest{Prompt: "x"}, func(string) {}); err == nil || !strings.Contains(err.Error(), "--model") {
		t.Errorf("no chatter: %v", err)
	}
}

func TestChatStop(t *testing.T) {
	sc := &scripted{tokens: []string{"a"}, block: true, started: make(chan struct{})}
	_, c, _ := newChatServer(t, sc, "")
	done := make(chan apitype.ChatStats, 1)
	go func() {
		st, err := c.Chat(context.Background(), apitype.ChatRequest{ConversationID: "c1", Prompt: "x"}, func(string) {})
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	<-sc.started
	if n, err := c.StopChat(context.Background(), "c1"); err != nil || n.Stopped != 1 {
		t.Fatalf("stop: %+v %v", n, err)
	}
	if st := <-done; st.StopReason != "cancelled" {
		t.Errorf("stopped chat ended with %+v", st)
	}
}

func TestCompatAuth(t *testing.T) {
	_, _, h := newChatServer(t, &scripted{}, "lan-key")
	_, _, hClosed := newChatServer(t, &scripted{}, "")
	for _, tc := range []struct {
		name   string
		h      http.Handler
		remote string
		host   string
		header map[string]string
		want   int
	}{
		{"loopback, no key", h, "127.0.0.1:5000", "127.0.0.1:8080", nil, 200},
		{"loopback by name", h, "[::1]:5000", "localhost:8080", nil, 200},
		{"loopback with a local web origin", h, "127.0.0.1:5000", "127.0.0.1:8080", map[string]string{"Origin": "http://localhost:5173"}, 200},
		{"rebinding: foreign Host", h, "127.0.0.1:5000", "evil.example", nil, 401},
		{"cross-site fetch: foreign Origin", h, "127.0.0.1:5000", "127.0.0.1:8080", map[string]string{"Origin": "https://evil.example"}, 401},
		{"LAN without key", h, "192.168.1.9:5000", "192.168.1.2:8080", nil, 401},
		{"LAN with Bearer key", h, "192.168.1.9:5000", "192.168.1.2:8080", map[string]string{"Authorization": "Bearer lan-key"}, 200},
		{"LAN with x-api-key", h, "192.168.1.9:5000", "192.168.1.2:8080", map[string]string{"x-api-key": "lan-key"}, 200},
		{"LAN with a wrong key", h, "192.168.1.9:5000", "192.168.1.2:8080", map[string]string{"x-api-key": "nope"}, 401},
		{"LAN with the run token", h, "192.168.1.9:5000", "192.168.1.2:8080", map[string]string{"Authorization": "Bearer secret"}, 401}, // the API key only
		{"LAN with a stray Bearer and the x-api-key", h, "192.168.1.9:5000", "192.168.1.2:8080", map[string]string{"Authorization": "Bearer other", "x-api-key": "lan-key"}, 200},
		{"LAN when not exposed", hClosed, "192.168.1.9:5000", "192.168.1.2:8080", map[string]string{"x-api-key": "anything"}, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/v1/models", nil)
			r.RemoteAddr, r.Host = tc.remote, tc.host
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			tc.h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Errorf("HTTP %d, want %d: %s", w.Code, tc.want, w.Body)
			}
		})
	}
}

func TestOpenAIStreamWire(t *testing.T) {
	srv, _, _ := newChatServer(t, &scripted{tokens: []string{"Hi", "!"}}, "")
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"tiny","stream":true,"messages":[{"role":"user","content":"Hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var datas []string
	for _, l := range strings.Split(string(b), "\n") {
		if d, ok := strings.CutPrefix(l, "data: "); ok {
			datas = append(datas, d)
		}
	}
	if resp.Header.Get("Content-Type") != "text/event-stream" || len(datas) != 4 || datas[3] != "[DONE]" ||
		!strings.Contains(datas[0], `"role":"assistant","content":"Hi"`) || !strings.Contains(datas[2], `"finish_reason":"length"`) {
		t.Errorf("stream (%s):\n%s", resp.Header.Get("Content-Type"), b)
	}

	// A bad request is OpenAI's error shape with a 400.
	resp, err = http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), `"type":"invalid_request_error"`) || !strings.Contains(string(b), "Messages is empty") {
		t.Errorf("bad request: %d %s", resp.StatusCode, b)
	}
}

func TestChatFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		code int
		text string
	}{
		{"worded", problem.New(problem.NoModel, "No model is selected."), 503, "No model is selected."},
		{"a request problem", problem.New(problem.EmptyConversation, "The conversation is empty; send at least one message."), 400, "The conversation is empty; send at least one message."},
		{"an unusable model", problem.New(problem.ModelLoad, "Cannot load x.gguf: the file ends early."), 422, "Cannot load x.gguf: the file ends early."},
		{"engine fact", errors.New("runner: boom"), 500, "Runner: boom."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, text := chatFailure(tc.err)
			if code != tc.code || text != tc.text {
				t.Errorf("chatFailure = %d %q, want %d %q", code, text, tc.code, tc.text)
			}
		})
	}
}

// TestCompatAuthShapes: a client on another computer is refused with a 401
// in the shape of the API it called (so each SDK raises its own
// authentication error), whether the key is missing or wrong; the header
// its SDK sends lets it in; a client on this computer needs no key.
func TestCompatAuthShapes(t *testing.T) {
	_, _, h := newChatServer(t, &scripted{tokens: []string{"a"}}, "lan-key-0123456789")
	const (
		chat     = `{"model":"tiny","max_tokens":1,"messages":[{"role":"user","content":"Hi"}]}`
		ollamaIn = `{"model":"tiny","stream":false,"messages":[{"role":"user","content":"Hi"}]}`
	)
	type api struct {
		name, method, path, body string
		header                   string // the header its official client sends the key in
		prefix                   string // "Bearer " or ""
		shape                    func(t *testing.T, body []byte) string
	}
	openaiShape := func(t *testing.T, b []byte) string {
		var e struct {
			Error struct{ Message, Type, Code string }
		}
		if err := json.Unmarshal(b, &e); err != nil || e.Error.Type != "invalid_request_error" || e.Error.Code != "invalid_api_key" || e.Error.Message == "" {
			t.Errorf("not OpenAI's invalid_api_key error: %s", b)
		}
		return e.Error.Message
	}
	anthropicShape := func(t *testing.T, b []byte) string {
		var e struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if err := json.Unmarshal(b, &e); err != nil || e.Type != "error" || e.Error.Type != "authentication_error" || e.Error.Message == "" {
			t.Errorf("not Anthropic's authentication_error: %s", b)
		}
		return e.Error.Message
	}
	ollamaShape := func(t *testing.T, b []byte) string {
		var e map[string]any
		if err := json.Unmarshal(b, &e); err != nil || len(e) != 1 || e["error"] == "" {
			t.Errorf("not Ollama's {\"error\"}: %s", b)
		}
		msg, _ := e["error"].(string)
		return msg
	}
	apis := []api{
		{"OpenAI models", "GET", "/v1/models", "", "Authorization", "Bearer ", openaiShape},
		{"OpenAI chat", "POST", "/v1/chat/completions", chat, "Authorization", "Bearer ", openaiShape},
		{"Anthropic messages", "POST", "/v1/messages", chat, "x-api-key", "", anthropicShape},
		{"Ollama tags", "GET", "/api/tags", "", "Authorization", "Bearer ", ollamaShape},
		{"Ollama chat", "POST", "/api/chat", ollamaIn, "Authorization", "Bearer ", ollamaShape},
	}
	send := func(a api, remote, key string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(a.method, a.path, strings.NewReader(a.body))
		r.RemoteAddr, r.Host = remote, "127.0.0.1:47471"
		if remote != "127.0.0.1:5000" {
			r.Host = "192.168.1.2:47471"
		}
		if key != "" {
			r.Header.Set(a.header, a.prefix+key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			for _, remote := range []string{"192.168.1.9:5000", "[fd00::9]:5000", "[::ffff:10.0.0.9]:5000"} {
				w := send(a, remote, "")
				if w.Code != http.StatusUnauthorized {
					t.Fatalf("from %s without a key: HTTP %d, want 401: %s", remote, w.Code, w.Body)
				}
				if msg := a.shape(t, w.Body.Bytes()); !strings.Contains(msg, "Missing API key") {
					t.Errorf("without a key, the message %q does not say it is missing", msg)
				}
			}
			w := send(a, "192.168.1.9:5000", "lan-key-wrong")
			if w.Code != http.StatusUnauthorized {
				t.Fatalf("wrong key: HTTP %d, want 401: %s", w.Code, w.Body)
			}
			if msg := a.shape(t, w.Body.Bytes()); !strings.Contains(msg, "Wrong API key") {
				t.Errorf("with a wrong key, the message %q does not say it is wrong", msg)
			}
			if w := send(a, "192.168.1.9:5000", "lan-key-0123456789"); w.Code != http.StatusOK {
				t.Errorf("from the LAN with the key in %s: HTTP %d, want 200: %s", a.header, w.Code, w.Body)
			}
			if w := send(a, "127.0.0.1:5000", ""); w.Code != http.StatusOK {
				t.Errorf("from loopback without a key: HTTP %d, want 200: %s", w.Code, w.Body)
			}
		})
	}
}
