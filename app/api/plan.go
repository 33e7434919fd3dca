package api

import (
	"net/http"

	"homering/app/api/apitype"
)

func (u *ui) plan(w http.ResponseWriter, r *http.Request) {
	p, err := u.buildPlan()
	reply(w, p, err)
}

// buildPlan is the agent's device map, with this device's measured speed
// from the chats the API served.
func (u *ui) buildPlan() (apitype.Plan, error) { return u.s.Agent.DeviceMap() }
