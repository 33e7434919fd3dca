package api

import (
	"net/http"

	"homering/app/api/apitype"
)

// registerPull adds the model downloads (the agent's Pull, app/pull):
// POST /api/v1/pull starts one and returns at once, GET /api/v1/pulls says
// how each goes (the Work item with the same ID draws its bar), POST
// /api/v1/pull/cancel stops one, keeping its partial for a resume. POST
// /api/v1/models/file?name=NAME.gguf adds the request's body to the model
// folder: a file dropped on the window.
func (s *Server) registerPull(m *http.ServeMux) {
	m.HandleFunc("POST /api/v1/pull", func(w http.ResponseWriter, r *http.Request) {
		var req apitype.PullRequest
		if decode(w, r, &req) {
			p, err := s.Agent.Pull(req.Ref)
			reply(w, p, err)
		}
	})
	m.HandleFunc("GET /api/v1/pulls", func(w http.ResponseWriter, r *http.Request) { reply(w, s.Agent.Pulls(), nil) })
	m.HandleFunc("POST /api/v1/pull/cancel", func(w http.ResponseWriter, r *http.Request) {
		var req apitype.PullCancelRequest
		if decode(w, r, &req) {
			reply(w, struct{}{}, s.Agent.CancelPull(req.ID))
		}
	})
	m.HandleFunc("POST /api/v1/models/file", func(w http.ResponseWriter, r *http.Request) {
		p, err := s.Agent.AddModel(r.URL.Query().Get("name"), r.Body, r.ContentLength)
		reply(w, p, err)
	})
}
