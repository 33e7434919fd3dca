package api

import (
	"net/http"

	"homering/app/agent"
)

// registerFolders adds GET /api/v1/folders, the model folder's Browse:
// the folders inside a path of this computer (hidden ones left out), with
// how many GGUFs it holds. The control API is loopback and token-only, so
// only the person at this computer sees the names.
func (s *Server) registerFolders(m *http.ServeMux) {
	m.HandleFunc("GET /api/v1/folders", func(w http.ResponseWriter, r *http.Request) {
		f, err := agent.Folders(r.URL.Query().Get("path"))
		reply(w, f, err)
	})
}
