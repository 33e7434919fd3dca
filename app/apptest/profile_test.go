//go:build linux

package apptest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"homering/engine/profile"
)

// TestWebUIProfilingBar: a real `homering headless` with no cached profile
// measures its device in the background (its quiet spell shortened with
// HOMERING_PROFILE_QUIET) and the web UI shows it as a progress bar that
// counts steps (frontend/tests/profile.mjs drives chromium and saves
// profiling.png); afterwards the profile is cached and the device map
// plans this device with it. Screenshots stay in $HOMERING_UI_SHOTS when
// set.
func TestWebUIProfilingBar(t *testing.T) {
	needFrontend(t)
	e := NewEnv(t)
	n := e.NewNode(t, "den")
	model, _ := filepath.Abs("../../testdata/models/llama-Q4_K.gguf")
	settings, _ := json.Marshal(map[string]any{"model": model, "context_tokens": 256})
	if err := os.WriteFile(filepath.Join(n.Home, "settings.json"), settings, 0o600); err != nil {
		t.Fatal(err)
	}
	// Long enough for chromium to open the page before the bar begins.
	t.Setenv("HOMERING_PROFILE_QUIET", "15s")
	n.Start(t)
	runUIScript(t, n, "profile.mjs", 8, []string{"profiling.png", "devices.png"})
	// The agent's child cached it where the planner reads it.
	p, ok, err := profile.LoadCached(n.Home)
	if err != nil || !ok {
		t.Fatalf("no cached profile in %s after the bar ended (err %v)", n.Home, err)
	}
	if p.CPUFlops["q4_k"] <= 0 || p.Threads < 1 {
		t.Errorf("cached profile = threads %d, flops %v", p.Threads, p.CPUFlops)
	}
}
