package discovery

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDeps keeps the pure half of discovery pure (STYLE lessons 1 and 10):
// no sockets, no processes, no outside libraries, no clock.
func TestDeps(t *testing.T) {
	forbiddenDirect := map[string]string{
		"net":     "pure packages take addresses as net/netip values; sockets belong to discovery/mdns",
		"os/exec": "no processes in pure code",
	}
	forbiddenDeps := []string{"github.com/grandcat/zeroconf", "github.com/gorilla/websocket", "github.com/wailsapp", "fyne.io/systray", "github.com/draffensperger/golp", "github.com/ollama/ollama"}
	for _, pkg := range []string{"homering/discovery", "homering/discovery/identity"} {
		out, err := exec.Command("go", "list", "-json", pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		var p struct{ Imports, Deps []string }
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatal(err)
		}
		for imp, why := range forbiddenDirect {
			if slices.Contains(p.Imports, imp) {
				t.Errorf("%s imports %s: %s", pkg, imp, why)
			}
		}
		for _, d := range p.Deps {
			for _, f := range forbiddenDeps {
				if strings.HasPrefix(d, f) {
					t.Errorf("%s depends on %s: leaves use the standard library only", pkg, d)
				}
			}
		}
	}
	// The table gets time as an argument (STYLE lesson 1).
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "time.Now(") || strings.Contains(string(b), "math/rand") {
			t.Errorf("%s reads the clock or global randomness; take now or a *rand.Rand as an argument", f)
		}
	}
}
