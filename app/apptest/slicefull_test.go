//go:build linux

package apptest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSliceCacheDiskFull: a worker whose slice cache is on a full disk (a
// 64 KiB tmpfs; the slice needs about 1 MB) refuses the head's job with
// the sentence that names its cache folder and what to do, leaves no
// partial slice file behind, and lives on; the head re-plans without it
// (its log says why) and the reply equals the one-device reply (issue 21
// item 6).
func TestSliceCacheDiskFull(t *testing.T) {
	t.Setenv("HOMERING_DEBUG", "1") // the engines' stderr, where the worker's refusal is logged, reaches the agents' logs
	env := NewEnv(t)
	a, b := env.NewNode(t, "a"), env.NewNode(t, "b")
	gen := filepath.Join(t.TempDir(), "llama6.gguf")
	if out, err := exec.Command(env.Bin, "gen-model", "-layers", "6", "-type", "Q8_0", "-o", gen).CombinedOutput(); err != nil {
		t.Fatalf("gen-model: %v\n%s", err, out)
	}
	cache := filepath.Join(b.Home, "cache", "slices")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	// Mounted before b starts: `ip netns exec` copies this mount into the
	// agent's own mount namespace.
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "homering-test", cache).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", cache).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", cache, err, out)
		}
	})
	contributing(t, 512, a, b)
	const prompt = "Once upon a time"
	want, _ := chat(t, a, "-m", gen, "-n", "16", prompt)
	pairWorkers(t, a, b)

	got, st := chat(t, a, "-m", gen, "-n", "16", "--devices", "all", "--rounds", "1", prompt)
	if got != want {
		t.Errorf("reply %q, want the one-device reply %q", got, want)
	}
	if st.Ring == nil {
		t.Fatalf("no ring: %+v", st)
	}
	lost := false
	for _, id := range st.Ring.Lost {
		lost = lost || id.String() == b.ID(t)
	}
	if len(st.Ring.Devices) != 1 || !lost {
		t.Errorf("ring %+v, want re-planned without b", st.Ring)
	}
	const said = "slice: not enough disk space for the weight slice: it needs 1 MB in "
	if !strings.Contains(b.Log(), said+cache+"; free some space or choose another cache directory") {
		t.Errorf("b's log does not say its cache disk is full:\n%s", b.Log())
	}
	if !strings.Contains(a.Log(), "cannot serve the plan (code 3): "+said) {
		t.Errorf("a's log does not say why b left the ring:\n%s", a.Log())
	}
	if left, err := os.ReadDir(cache); err != nil || len(left) != 0 {
		t.Errorf("b's cache after the full disk: %v (%v), want no partial slice", left, err)
	}
	if _, err := b.CLI(context.Background(), "status"); err != nil {
		t.Errorf("b after the full disk: %v", err)
	}
}
