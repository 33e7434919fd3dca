package api

import (
	"net/http"

	"homering/app/api/apitype"
)

// models is GET /api/v1/models: the agent's model list.
func (u *ui) models(w http.ResponseWriter, r *http.Request) {
	out, err := u.s.Agent.Models()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, apitype.Error{Error: sentence(err)})
		return
	}
	reply(w, out, nil)
}
