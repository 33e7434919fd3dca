package halda_test

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDeps keeps halda pure (STYLE lessons 1, 2, 10): stdlib only, and none
// of the imports that would let it do I/O, time or cgo; golp only in
// halda/lpsolve.
func TestDeps(t *testing.T) {
	type pkg struct {
		ImportPath string
		Imports    []string
		Deps       []string
		Standard   bool
	}
	list := func(path string) pkg {
		out, err := exec.Command("go", "list", "-json", path).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", path, err)
		}
		var p pkg
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	h := list("homering/halda")
	forbidden := map[string]string{
		"os":        "halda does no I/O: profiles come in as values",
		"os/exec":   "halda starts no processes",
		"net":       "halda opens no sockets",
		"time":      "halda reads no clock: plans depend only on the Problem",
		"math/rand": "halda uses no global randomness", "math/rand/v2": "halda uses no global randomness",
		"unsafe": "halda is plain Go",
	}
	for _, imp := range h.Imports {
		if why, bad := forbidden[imp]; bad {
			t.Errorf("halda imports %s: %s", imp, why)
		}
		if strings.Contains(imp, ".") || strings.HasPrefix(imp, "homering/") {
			t.Errorf("halda imports %s: it is stdlib only", imp)
		}
	}
	for _, d := range h.Deps {
		if strings.Contains(d, "golp") || d == "runtime/cgo" {
			t.Errorf("halda depends on %s: the solver is behind halda.Solver", d)
		}
	}
	l := list("homering/halda/lpsolve")
	if !slices.Contains(l.Imports, "github.com/draffensperger/golp") {
		t.Errorf("halda/lpsolve does not import golp")
	}
	// No other package of the module imports golp.
	// -e: a package of another team that does not build right now must not
	// hide a golp import elsewhere.
	out, err := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "homering/...").Output()
	if err != nil {
		t.Fatalf("go list homering/...: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && f[0] != "homering/halda/lpsolve" && slices.Contains(f[1:], "github.com/draffensperger/golp") {
			t.Errorf("%s imports golp; only halda/lpsolve may", f[0])
		}
	}
}
