package api

import (
	"fmt"
	"net/http"
	"strings"

	"homering/app/api/apitype"
	"homering/app/config"
)

// SettingsWatcher is a Chatter that acts on a saved settings change (the
// agent's ends a ring job it keeps for the next turn when the model, the
// context size or the keep time changes). postSettings calls it after
// saving, with the settings before and after.
type SettingsWatcher interface {
	SettingsChanged(before, after apitype.Settings)
}

// LoadSettings reads this device's settings (app/config's settings.json)
// as the API shows them; a missing file gives the defaults. The chat and
// OpenAI-style endpoints read Expose and APIKey from here.
func LoadSettings(dir string) (apitype.Settings, error) {
	f, err := config.LoadSettings(dir)
	if err != nil {
		return apitype.Settings{}, err
	}
	return toAPI(f, ""), nil
}

// toAPI is the settings file as the API shows it, with the device's name
// (kept in config.json).
func toAPI(f config.Settings, name string) apitype.Settings {
	return apitype.Settings{Name: name, ModelDir: f.ModelDir, Model: f.Model, ContextTokens: f.ContextTokens,
		MemoryBudget: f.MemoryBudget, Expose: f.Expose, APIKey: f.APIKey, RingKeepSeconds: f.RingKeepSeconds, GPU: f.GPU,
		APIPort: f.APIPort}
}

func fromAPI(s apitype.Settings) config.Settings {
	return config.Settings{ModelDir: s.ModelDir, Model: s.Model, ContextTokens: s.ContextTokens,
		MemoryBudget: s.MemoryBudget, Expose: s.Expose, APIKey: s.APIKey, RingKeepSeconds: s.RingKeepSeconds, GPU: s.GPU,
		APIPort: s.APIPort}
}

// validateSettings checks a settings change; every problem is one sentence.
func validateSettings(s apitype.Settings) error {
	err := fromAPI(s).Validate()
	if len(s.Name) > 63 {
		const long = "The device name is longer than 63 bytes; choose a shorter one."
		if err == nil {
			return fmt.Errorf("%w: %s", config.ErrSettings, long)
		}
		return fmt.Errorf("%w: %s %s", config.ErrSettings, long, strings.TrimPrefix(err.Error(), config.ErrSettings.Error()+": "))
	}
	return err
}

// current returns the settings, loading them once.
func (u *ui) current() (*config.Settings, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.settings == nil {
		f, err := config.LoadSettings(u.s.Agent.Status().ConfigDir)
		if err != nil {
			return nil, err
		}
		u.settings = &f
	}
	c := *u.settings
	return &c, nil
}

func (u *ui) getSettings(w http.ResponseWriter, r *http.Request) {
	f, err := u.current()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, apitype.Error{Error: sentence(err)})
		return
	}
	reply(w, toAPI(*f, u.s.Agent.Status().Device.Name), nil)
}

func (u *ui) postSettings(w http.ResponseWriter, r *http.Request) {
	// A client that does not know the keep time or the API port leaves them
	// as they are.
	old, err := u.current()
	if err != nil {
		d := config.DefaultSettings()
		old = &d
	}
	req := apitype.Settings{RingKeepSeconds: old.RingKeepSeconds, APIPort: old.APIPort}
	if !decode(w, r, &req) {
		return
	}
	if req.APIPort == 0 { // no port: a Go client that predates it sends 0
		req.APIPort = old.APIPort
	}
	req.Name = strings.TrimSpace(req.Name)
	req.ModelDir = config.ExpandHome(strings.TrimSpace(req.ModelDir)) // ~/models, as a shell would
	if err := validateSettings(req); err != nil {
		writeJSON(w, http.StatusBadRequest, apitype.Error{Error: strings.TrimPrefix(err.Error(), config.ErrSettings.Error()+": ")})
		return
	}
	st := u.s.Agent.Status()
	if req.Name != st.Device.Name {
		if err := u.s.Agent.SetName(req.Name); err != nil {
			reply(w, nil, err)
			return
		}
	}
	f := fromAPI(req)
	if err := config.SaveSettings(st.ConfigDir, f); err != nil {
		reply(w, nil, err)
		return
	}
	u.mu.Lock()
	u.settings = &f
	u.mu.Unlock()
	now := toAPI(f, u.s.Agent.Status().Device.Name)
	if l := u.s.ChatListener; l != nil && sharesAPI(now) != sharesAPI(toAPI(*old, "")) {
		l.SetExpose(sharesAPI(now)) // at once: the reply's caller may connect from the LAN next
	}
	if sw, ok := u.s.backend().(SettingsWatcher); ok {
		sw.SettingsChanged(toAPI(*old, st.Device.Name), now)
	}
	reply(w, now, nil)
}
