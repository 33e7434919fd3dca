package api

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"homering/app/problem"
)

// TestChatFitContext: the UI's chat error event names a context_full
// problem by its code (the UI puts the message back to edit); Ollama's chat
// asks the Chatter to leave old messages out, as Ollama does, while OpenAI's
// and Anthropic's ask for the error, which arrives as their API's 400
// (OpenAI's with its code context_length_exceeded, streamed or not).
func TestChatFitContext(t *testing.T) {
	full := problem.New(problem.ContextFull, "The last message is too long for the context (300 tokens; the context holds 256): shorten it or raise the context length.")
	sc := &scripted{err: full}
	srv, _, _ := newChatServer(t, sc, "")
	post := func(path, body string, h ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	msgs := `"messages":[{"role":"user","content":"Hi"}]`

	_, b := post("/api/v1/chat", `{"fit_context":true,`+msgs+`}`, "Authorization", "Bearer secret")
	if !strings.Contains(b, "event: error") || !strings.Contains(b, `"code":"context_full"`) || !strings.Contains(b, "too long for the context") {
		t.Errorf("UI chat's error event:\n%s", b)
	}
	for _, tc := range []struct {
		path, body string
		fit        bool
		want       string // in the 400's body
	}{
		{"/api/chat", `{"model":"tiny","stream":false,` + msgs + `}`, true, `{"error":"The last message is too long`},
		{"/v1/chat/completions", `{"model":"tiny",` + msgs + `}`, false, `"type":"invalid_request_error","param":null,"code":"context_length_exceeded"`},
		{"/v1/chat/completions", `{"model":"tiny","stream":true,` + msgs + `}`, false, `"code":"context_length_exceeded"`},
		{"/v1/messages", `{"model":"tiny","max_tokens":5,` + msgs + `}`, false, `"type":"invalid_request_error"`},
	} {
		n := len(sc.got)
		code, b := post(tc.path, tc.body)
		if len(sc.got) != n+1 {
			t.Fatalf("%s did not reach the Chatter: %d %s", tc.path, code, b)
		}
		if got := sc.got[n]; got.FitContext != tc.fit {
			t.Errorf("%s: FitContext = %v, want %v", tc.path, got.FitContext, tc.fit)
		}
		if code != http.StatusBadRequest || !strings.Contains(b, tc.want) || !strings.Contains(b, "too long for the context") {
			t.Errorf("%s: %d %s; want a 400 with %s", tc.path, code, b, tc.want)
		}
	}
}
