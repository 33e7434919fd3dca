package api

import (
	"crypto/subtle"
	"io/fs"
	"net/http"
	"strings"

	"homering/app/agent"
	"homering/app/api/apitype"
	"homering/frontend"
)

// TokenCookie carries the per-run token for the web UI. It is HttpOnly (page
// scripts never see it) and SameSite=Strict (other sites cannot ride it).
const TokenCookie = "homering_token"

// ui holds the web UI's server-side state: the conversations. One per
// Handler.
type ui struct {
	s    *Server
	conv *agent.Conversations
}

// registerUI adds the UI's routes: the embedded app at / and its endpoints.
func (s *Server) registerUI(m *http.ServeMux) {
	u := &ui{s: s}
	u.conv = s.Agent.Conversations()
	if s.Chat != nil {
		// Under the agent's chat meter (registerChat runs after this), the
		// chats' waits are progress bars and the device map shows their
		// measured speed (app/agent/measured.go).
		s.Chat = s.Agent.MeasureChat(s.Chat)
	}
	static := http.FileServerFS(frontend.FS())
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		if t := r.URL.Query().Get("token"); t != "" {
			// Browser entry: trade the token in the URL for a cookie and
			// drop it from the address bar and history.
			if subtle.ConstantTimeCompare([]byte(t), []byte(s.Token)) != 1 {
				writeJSON(w, http.StatusUnauthorized, apitype.Error{Error: "That link has an old or wrong token (the agent restarted?); open the chat again from the tray menu."})
				return
			}
			http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: s.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		static.ServeHTTP(w, r)
	})
	m.Handle("GET /assets/", static)
	m.Handle("GET /favicon.svg", static)
	m.HandleFunc("GET /api/v1/settings", u.getSettings)
	m.HandleFunc("POST /api/v1/settings", u.postSettings)
	m.HandleFunc("GET /api/v1/models", u.models)
	m.HandleFunc("GET /api/v1/plan", u.plan)
	m.HandleFunc("GET /api/v1/live", u.live)
	m.HandleFunc("GET /api/v1/conversations", u.listConversations)
	m.HandleFunc("GET /api/v1/conversations/{id}", u.getConversation)
	m.HandleFunc("PUT /api/v1/conversations/{id}", u.putConversation)
	m.HandleFunc("DELETE /api/v1/conversations/{id}", u.deleteConversation)
}

// publicPath reports whether a request needs no token: the UI's static
// files (no secrets in them) and the token-for-cookie entry.
func publicPath(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := r.URL.Path
	if p == "/" || p == "/favicon.svg" {
		return true
	}
	if strings.HasPrefix(p, "/assets/") {
		_, err := fs.Stat(frontend.FS(), strings.TrimPrefix(p, "/"))
		return err == nil
	}
	return false
}

// cookieToken returns the token cookie's value, or "".
func cookieToken(r *http.Request) string {
	c, err := r.Cookie(TokenCookie)
	if err != nil {
		return ""
	}
	return c.Value
}
