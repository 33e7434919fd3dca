package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SettingsFile holds, in the config directory, the settings the UI and
// `homering settings` edit; config.json keeps the device's network setup
// and its name.
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

// DefaultAPIPort is where the OpenAI-, Anthropic- and Ollama-compatible
// APIs listen (http://127.0.0.1:47471) unless the settings say otherwise:
// fixed, so that a client configured once keeps working across restarts;
// not Ollama's 11434 or LM Studio's 1234, so that Homering runs beside
// them; next to the link port 47470, so one firewall rule can cover both.
const DefaultAPIPort = 47471

// ErrSettings is a rejected settings change.
var ErrSettings = errors.New("config: invalid settings")

// Settings is SettingsFile's content.
type Settings struct {
	ModelDir      string `json:"model_dir"`      // folder scanned for GGUFs; "" none
	Model         string `json:"model"`          // path of the selected GGUF; "" none chosen
	ContextTokens int    `json:"context_tokens"` // KV cache to plan and run for
	MemoryBudget  int64  `json:"memory_budget"`  // bytes of RAM Homering may use on this device; 0: no cap
	Expose        bool   `json:"expose"`         // serve the chat APIs on the LAN (then APIKey is required)
	APIKey        string `json:"api_key"`        // required from LAN clients when Expose is on
	// RingKeepSeconds: absent in files written before it existed, so
	// loading starts from the default.
	RingKeepSeconds int `json:"ring_keep_seconds"`
	// GPU is "off" to keep Homering off this device's GPUs (no backend
	// library is loaded, plans give it no GPU layers: a driver that
	// misbehaves, a GPU needed for games); "" or "on" uses them. A string,
	// not a bool, so that a file or a client that predates it means on.
	GPU string `json:"gpu,omitempty"`
	// APIPort is the loopback port of the compatible APIs (read at start).
	// Absent in files written before it existed: loading starts from
	// DefaultAPIPort.
	APIPort int `json:"api_port"`
	// Draft is the speculative draft model of greedy chats: "" picks one
	// by itself (a model of the same vocabulary and at most a quarter of
	// the chat model's size among the model sources: engine/head.PickDraft),
	// DraftOff none, else the path of a GGUF.
	Draft string `json:"draft,omitempty"`
}

// DraftOff is the draft setting that turns speculative decoding off.
const DraftOff = "off"

// UseGPU reports whether the gpu setting lets Homering use the GPUs.
func (s Settings) UseGPU() bool { return s.GPU != GPUOff }

// The gpu setting's values ("" is on).
const (
	GPUOn  = "on"
	GPUOff = "off"
)

// DefaultSettings is what a device without settings.json runs with.
func DefaultSettings() Settings {
	return Settings{ContextTokens: DefaultContextTokens, RingKeepSeconds: DefaultRingKeepSeconds, APIPort: DefaultAPIPort}
}

// LoadSettings reads dir's settings.json; a missing file gives the defaults.
func LoadSettings(dir string) (Settings, error) {
	s := DefaultSettings()
	b, err := os.ReadFile(filepath.Join(dir, SettingsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		return Settings{}, fmt.Errorf("%s cannot be read (%v); fix it or delete it to start from defaults", filepath.Join(dir, SettingsFile), err)
	}
	s.ModelDir, s.Model = ExpandHome(s.ModelDir), ExpandHome(s.Model) // a hand-edited ~/models
	return s, nil
}

// SaveSettings writes s as dir's settings.json (0600: it holds the API key).
func SaveSettings(dir string, s Settings) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return WriteFile(filepath.Join(dir, SettingsFile), b)
}

// Validate checks settings a person changed; every problem is one sentence,
// all of them joined after ErrSettings.
func (s Settings) Validate() error {
	var errs []string
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
	if s.GPU != "" && s.GPU != GPUOn && s.GPU != GPUOff {
		errs = append(errs, fmt.Sprintf("The gpu setting is %q; give on or off.", s.GPU))
	}
	if s.Draft != "" && s.Draft != DraftOff {
		if st, err := os.Stat(s.Draft); err != nil || st.IsDir() {
			errs = append(errs, fmt.Sprintf("The draft model %q is not a file; pick a GGUF of the chat model's family, %q for none, or leave it empty to pick one by itself.", s.Draft, DraftOff))
		}
	}
	if s.APIPort < 1 || s.APIPort > 65535 {
		errs = append(errs, fmt.Sprintf("The API port %d is not a TCP port; use 1-65535 (default %d).", s.APIPort, DefaultAPIPort))
	}
	if s.Expose && len(s.APIKey) < 16 {
		errs = append(errs, "Sharing the API on the network needs an API key of at least 16 characters; generate one.")
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrSettings, strings.Join(errs, " "))
	}
	return nil
}
