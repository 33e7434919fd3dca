package apptest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"homering/app/api/apitype"
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
	if _, err := os.Stat("../../frontend/dist/index.html"); err != nil {
		t.Fatal("frontend/dist is not built: run build/setup.sh (npm run build in frontend/)")
	}
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
	b, err := os.ReadFile(filepath.Join(n.Home, apitype.InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	var info apitype.Info
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	out := os.Getenv("HOMERING_UI_SHOTS")
	if out == "" {
		out = t.TempDir()
	} else if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs("../..")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", n.NS, "node", filepath.Join(root, "frontend/tests/profile.mjs"))
	cmd.Env = append(os.Environ(), "HOMERING_URL="+info.URL, "HOMERING_TOKEN="+info.Token, "OUT="+out, "HOME="+t.TempDir())
	cmd.Dir = root
	log, err := cmd.CombinedOutput()
	t.Logf("profile.mjs:\n%s", log)
	if err != nil {
		t.Errorf("the profiling bar checks failed: %v", err)
	}
	var res struct {
		Checks []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"checks"`
	}
	rb, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatalf("profile.mjs wrote no result: %v", err)
	}
	if err := json.Unmarshal(rb, &res); err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Checks {
		if !c.OK {
			t.Errorf("web UI check failed: %s", c.Name)
		}
	}
	if len(res.Checks) < 8 {
		t.Errorf("only %d checks ran; the script stopped early", len(res.Checks))
	}
	for _, want := range []string{"profiling.png", "devices.png"} {
		if st, err := os.Stat(filepath.Join(out, want)); err != nil || st.Size() < 5000 {
			t.Errorf("screenshot %s missing or nearly empty: %v", want, err)
		}
	}
	// The agent's child cached it where the planner reads it.
	p, ok, err := profile.LoadCached(n.Home)
	if err != nil || !ok {
		t.Fatalf("no cached profile in %s after the bar ended (err %v)", n.Home, err)
	}
	if p.CPUFlops["q4_k"] <= 0 || p.Threads < 1 {
		t.Errorf("cached profile = threads %d, flops %v", p.Threads, p.CPUFlops)
	}
}
