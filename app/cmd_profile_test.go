package app

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"homering/app/config"
	"homering/halda"
)

const profileModel = "../testdata/models/llama-Q4_K.gguf"

// runCmd runs `homering args...` in this process and returns its exit
// status, stdout and stderr.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := mainWith(args, env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb})
	return code, out.String(), errb.String()
}

// TestProfileJSONFeedsPlan: `homering profile --json > me.json` and
// `homering plan --devices me.json` work together without hand editing.
func TestProfileJSONFeedsPlan(t *testing.T) {
	home := t.TempDir()
	t.Setenv(config.EnvHome, home)
	code, out, errs := runCmd(t, "profile", "--model", profileModel, "--threads", "1", "--name", "me", "--json")
	if code != 0 {
		t.Fatalf("profile exit %d: %s", code, errs)
	}
	var d halda.Device
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("profile --json is not a Halda device: %v\n%s", err, out)
	}
	if d.Name != "me" || d.CPUFlops["q4_k"] <= 0 || d.RAMAvailable <= 0 || d.DiskSeqBytesPerSec <= 0 {
		t.Errorf("device = %+v", d)
	}
	me := filepath.Join(t.TempDir(), "me.json")
	if err := os.WriteFile(me, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	code, planOut, errs := runCmd(t, "plan", "--devices", me, "--model", profileModel)
	if code != 0 {
		t.Fatalf("plan exit %d: %s", code, errs)
	}
	if !strings.Contains(planOut, "me (head)") || !strings.Contains(planOut, "predicted") {
		t.Errorf("plan output:\n%s", planOut)
	}
	// The measurement was cached: one entry, and the text form reads it.
	ents, err := os.ReadDir(filepath.Join(home, "profiles"))
	if err != nil || len(ents) != 1 {
		t.Fatalf("profiles dir: %v, %d entries; want 1", err, len(ents))
	}
	code, text, errs := runCmd(t, "profile", "--model", profileModel, "--threads", "1")
	if code != 0 {
		t.Fatalf("profile exit %d: %s", code, errs)
	}
	for _, want := range []string{"cpu GFLOPS", "q4_k", "disk", "KV cache", "bytes per layer"} {
		if !strings.Contains(text, want) {
			t.Errorf("profile text lacks %q:\n%s", want, text)
		}
	}
}

func TestProfileBadArgs(t *testing.T) {
	t.Setenv(config.EnvHome, t.TempDir())
	if code, _, _ := runCmd(t, "profile", "extra"); code != 2 {
		t.Errorf("profile with an argument: exit %d, want 2", code)
	}
	code, _, errs := runCmd(t, "profile", "--model", filepath.Join(t.TempDir(), "missing.gguf"), "--threads", "1")
	if code != 1 || !strings.Contains(errs, "homering profile:") {
		t.Errorf("profile of a missing model: exit %d, %q", code, errs)
	}
}
