package api

import (
	"net/http"

	"homering/app/agent"
	"homering/app/api/apitype"
)

// SettingsWatcher is a Chatter that acts on a saved settings change (the
// agent's ends a ring job it keeps for the next turn when the model, the
// context size or the keep time changes). postSettings calls it after
// saving, with the settings before and after.
type SettingsWatcher interface {
	SettingsChanged(before, after apitype.Settings)
}

// LoadSettings reads this device's settings (settings.json in config
// directory dir) as the API shows them; a missing file gives the defaults.
// The chat and OpenAI-style endpoints read Expose and APIKey from here.
func LoadSettings(dir string) (apitype.Settings, error) { return agent.LoadSettings(dir) }

func (u *ui) getSettings(w http.ResponseWriter, r *http.Request) {
	set, err := u.s.Agent.Settings()
	reply(w, set, err)
}

func (u *ui) postSettings(w http.ResponseWriter, r *http.Request) {
	// A client that does not know the keep time, the API port or the
	// draft leaves them as they are.
	old, err := u.s.Agent.Settings()
	if err != nil {
		old = agent.DefaultSettings()
	}
	req := apitype.Settings{RingKeepSeconds: old.RingKeepSeconds, APIPort: old.APIPort, Draft: old.Draft}
	if !decode(w, r, &req) {
		return
	}
	if req.APIPort == 0 { // no port: a Go client that predates it sends 0
		req.APIPort = old.APIPort
	}
	before, now, err := u.s.Agent.SaveSettings(req)
	if err != nil {
		reply(w, nil, err)
		return
	}
	if l := u.s.ChatListener; l != nil && sharesAPI(now) != sharesAPI(before) {
		l.SetExpose(sharesAPI(now)) // at once: the reply's caller may connect from the LAN next
	}
	if sw, ok := u.s.backend().(SettingsWatcher); ok {
		sw.SettingsChanged(before, now)
	}
	reply(w, now, nil)
}
