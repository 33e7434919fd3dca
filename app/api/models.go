package api

import (
	"net/http"
)

// models is GET /api/v1/models: the agent's model list.
func (u *ui) models(w http.ResponseWriter, r *http.Request) {
	out, err := u.s.Agent.Models()
	reply(w, out, err)
}
