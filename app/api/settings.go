package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"homering/app/api/apitype"
	"homering/app/config"
)

// SettingsFile holds, in the config directory, the settings the UI edits
// beyond config.json (which keeps the device name).
const SettingsFile = "settings.json"

// DefaultContextTokens is the context a fresh install plans and runs for:
// enough for a long chat, small enough that its KV cache fits a laptop.
const DefaultContextTokens = 4096

// DefaultRingKeepSeconds is how long the head keeps a ring job ready after a
// chat unless the settings say otherwise: long enough for a person to read
// the reply and answer, so that the next turn starts at once.
const DefaultRingKeepSeconds = 120

// MaxRingKeepSeconds bounds RingKeepSeconds (engine/runner keeps a job an
// hour at most).
const MaxRingKeepSeconds = 3600

// SettingsWatcher is a Chatter that acts on a saved settings change (the
// agent's ends a ring job it keeps for the next turn when the model, the
// context size or the keep time changes). postSettings calls it after
// saving, with the settings before and after.
type SettingsWatcher interface {
	SettingsChanged(before, after apitype.Settings)
}

// ErrSettings is a rejected settings change.
var ErrSettings = errors.New("api: invalid settings")

// settingsFile is SettingsFile's content.
type settingsFile struct {
	ModelDir      string `json:"model_dir"`
	Model         string `json:"model"`
	ContextTokens int    `json:"context_tokens"`
	MemoryBudget  int64  `json:"memory_budget"`
	Expose        bool   `json:"expose"`
	APIKey        string `json:"api_key"`
	// RingKeepSeconds: absent in files written before it existed, so
	// loading starts from the default.
	RingKeepSeconds int `json:"ring_keep_seconds"`
}

// LoadSettings reads dir/settings.json; a missing file gives the defaults.
// The chat and OpenAI-style endpoints read Expose and APIKey from here.
func LoadSettings(dir string) (apitype.Settings, error) {
	f, err := loadSettingsFile(dir)
	if err != nil {
		return apitype.Settings{}, err
	}
	return f.api(""), nil
}

// defaultSettingsFile is what a device without settings.json runs with.
func defaultSettingsFile() *settingsFile {
	return &settingsFile{ContextTokens: DefaultContextTokens, RingKeepSeconds: DefaultRingKeepSeconds}
}

func loadSettingsFile(dir string) (*settingsFile, error) {
	f := defaultSettingsFile()
	b, err := os.ReadFile(filepath.Join(dir, SettingsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err == nil {
		err = json.Unmarshal(b, f)
	}
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read (%v); fix it or delete it to start from defaults", filepath.Join(dir, SettingsFile), err)
	}
	return f, nil
}

func (f *settingsFile) api(name string) apitype.Settings {
	return apitype.Settings{Name: name, ModelDir: f.ModelDir, Model: f.Model, ContextTokens: f.ContextTokens,
		MemoryBudget: f.MemoryBudget, Expose: f.Expose, APIKey: f.APIKey, RingKeepSeconds: f.RingKeepSeconds}
}

// validate checks a settings change; every problem is one sentence.
func validateSettings(s apitype.Settings) error {
	var errs []string
	if len(s.Name) > 63 {
		errs = append(errs, "The device name is longer than 63 bytes; choose a shorter one.")
	}
	if s.ContextTokens < 256 || s.ContextTokens > 1<<20 {
		errs = append(errs, fmt.Sprintf("A context length of %d tokens is outside 256-1048576; 4096 is a good start.", s.ContextTokens))
	}
	if s.MemoryBudget < 0 {
		errs = append(errs, "The memory budget cannot be negative; use 0 for no limit.")
	}
	if s.ModelDir != "" {
		if st, err := os.Stat(s.ModelDir); err != nil || !st.IsDir() {
			errs = append(errs, fmt.Sprintf("The model folder %q does not exist or is not a folder; pick an existing folder.", s.ModelDir))
		}
	}
	if s.RingKeepSeconds < 0 || s.RingKeepSeconds > MaxRingKeepSeconds {
		errs = append(errs, fmt.Sprintf("Keeping the ring ready for %d seconds after a chat is outside 0-%d; %d keeps it two minutes, 0 ends it with each reply.",
			s.RingKeepSeconds, MaxRingKeepSeconds, DefaultRingKeepSeconds))
	}
	if s.Expose && len(s.APIKey) < 16 {
		errs = append(errs, "Sharing the API on the network needs an API key of at least 16 characters; generate one.")
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrSettings, strings.Join(errs, " "))
	}
	return nil
}

// current returns the settings, loading them once.
func (u *ui) current() (*settingsFile, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.settings == nil {
		f, err := loadSettingsFile(u.s.Node.Status().ConfigDir)
		if err != nil {
			return nil, err
		}
		u.settings = f
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
	reply(w, f.api(u.s.Node.Status().Device.Name), nil)
}

func (u *ui) postSettings(w http.ResponseWriter, r *http.Request) {
	// A client that does not know the keep time leaves it as it is.
	old, err := u.current()
	if err != nil {
		old = defaultSettingsFile()
	}
	req := apitype.Settings{RingKeepSeconds: old.RingKeepSeconds}
	if !decode(w, r, &req) {
		return
	}
	req.Name = strings.TrimSpace(req.Name)
	req.ModelDir = strings.TrimSpace(req.ModelDir)
	if err := validateSettings(req); err != nil {
		writeJSON(w, http.StatusBadRequest, apitype.Error{Error: strings.TrimPrefix(err.Error(), ErrSettings.Error()+": ")})
		return
	}
	st := u.s.Node.Status()
	if req.Name != st.Device.Name {
		if err := u.s.Node.SetName(req.Name); err != nil {
			reply(w, nil, err)
			return
		}
	}
	f := &settingsFile{ModelDir: req.ModelDir, Model: req.Model, ContextTokens: req.ContextTokens,
		MemoryBudget: req.MemoryBudget, Expose: req.Expose, APIKey: req.APIKey, RingKeepSeconds: req.RingKeepSeconds}
	b, _ := json.MarshalIndent(f, "", "  ")
	if err := config.WriteFile(filepath.Join(st.ConfigDir, SettingsFile), b); err != nil {
		reply(w, nil, err)
		return
	}
	u.mu.Lock()
	u.settings = f
	u.mu.Unlock()
	now := f.api(u.s.Node.Status().Device.Name)
	if sw, ok := u.s.backend().(SettingsWatcher); ok {
		sw.SettingsChanged(old.api(st.Device.Name), now)
	}
	reply(w, now, nil)
}
