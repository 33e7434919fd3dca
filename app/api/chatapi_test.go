package api

import (
	"net/http/httptest"
	"slices"
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
	for _, path := range []string{"/api/v1/status", "/", "/api/v1/settings"} {
		if code := do(t, chatAPI, "GET", path, nil, &e); code != 404 {
			t.Errorf("GET %s on the chat API's port = %d, want 404 (the control API is not there)", path, code)
		}
	}
	var st apitype.Status
	if do(t, srv, "GET", "/api/v1/status", nil, &st) != 200 || st.ChatAPI != "http://127.0.0.1:47471" {
		t.Errorf("status chat_api = %q, want http://127.0.0.1:47471", st.ChatAPI)
	}

	taken := problem.Make(problem.ChatAPIPort, "Port 47471 of the OpenAI, Anthropic and Ollama compatible APIs is taken by another program; choose another in Settings (API port) or start Homering with --api-port N.")
	srv, _, _ = uiServerWith(t, nil, func(s *Server) { s.ChatAPIProblem = &taken })
	st = apitype.Status{}
	if do(t, srv, "GET", "/api/v1/status", nil, &st) != 200 || st.ChatAPI != "" ||
		!slices.ContainsFunc(st.Problems, func(p apitype.Problem) bool { return p == taken }) {
		t.Errorf("status with the port taken: chat_api %q, problems %+v; want none and the problem", st.ChatAPI, st.Problems)
	}
}
