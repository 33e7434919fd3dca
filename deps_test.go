package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The dependency rules of ../shared/STYLE.md (lesson 10 and "The same rules as
// a list"). Each rule names why: a broken rule usually means a C library or a
// GUI toolkit leaked into code that must stay pure, testable and portable.

const mod = "homering/"

// cLibs are the outside libraries that make a package cgo or GUI-bound; each may
// be imported directly by exactly the packages listed.
var cLibs = []struct {
	path    string   // import path prefix
	owners  []string // the only packages that may import it directly
	comment string
}{
	{"github.com/ollama/ollama/llama", []string{"engine/llama"}, "llama.cpp: 5-minute build, only the tokenizer and the reference use it"},
	{"github.com/ollama/ollama/ml/backend/ggml", []string{"engine/ggml", "engine/modelgen"}, "ggml: our window engine; the generator quantizes with it"},
	{"github.com/draffensperger/golp", []string{"halda/lpsolve"}, "lp_solve: halda stays pure Go behind the Solver interface"},
	{"github.com/grandcat/zeroconf", []string{"discovery/mdns"}, "mDNS: the peer table stays pure"},
	{"fyne.io/systray", []string{"app/tray"}, "the tray is a thin client of the API"},
	{"github.com/wailsapp/wails", []string{"app/window", "app"}, "the window is a thin client of the API"},
}

// pure packages: no cgo or GUI library even transitively, and no direct import
// of the listed standard packages (addresses come as net/netip, processes are
// never started). Those marked clockless also never read the clock: time comes
// in as an event or a now argument (see TestPureCodeReadsNoClock).
var pure = map[string][]string{
	"halda":              {"net", "os", "os/exec", "math/rand"},
	"engine/gguf":        {"net", "os/exec"},
	"engine/sample":      {"net", "os", "os/exec", "math/rand"},
	"engine/ring":        {"net", "os", "os/exec"},
	"engine/ring/wire":   {"net", "os", "os/exec"},
	"discovery":          {"net", "os", "os/exec"},
	"app/api/apitype":    {"net", "os/exec"},
	"app/api/openai":     {"net", "os/exec"},
	"app/api/anthropic":  {"net", "os/exec"},
	"app/api/ollama":     {"net", "os/exec"},
	"app/config":         {"net", "os/exec"},
	"discovery/identity": {"net", "os/exec"},
}

// thin surfaces may only talk to the agent through its API client.
var thin = []string{"app/tray", "app/window"}
var thinForbidden = []string{"engine", "halda", "discovery", "app/node"}

// clockless packages are pure state machines and functions: given the same
// inputs they give the same outputs, so they never read the clock or sleep.
var clockless = []string{"halda", "engine/sample", "engine/ring", "engine/ring/wire", "discovery"}

type pkg struct {
	Dir        string
	ImportPath string
	Imports    []string
	Deps       []string
	Doc        string
	GoFiles    []string
}

func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	all := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		all[strings.TrimPrefix(p.ImportPath, mod)] = p
	}
	return all
}

func TestDependencyRules(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 3 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for name, p := range pkgs {
		for _, imp := range p.Imports {
			for _, lib := range cLibs {
				if !strings.HasPrefix(imp, lib.path) {
					continue
				}
				owned := false
				for _, o := range lib.owners {
					owned = owned || o == name
				}
				if !owned {
					t.Errorf("%s imports %s; only %v may (%s)", name, imp, lib.owners, lib.comment)
				}
			}
		}
		if forbidden, ok := pure[name]; ok {
			for _, imp := range p.Imports {
				for _, f := range forbidden {
					if imp == f {
						t.Errorf("pure package %s imports %s directly", name, imp)
					}
				}
			}
			for _, dep := range p.Deps {
				for _, lib := range cLibs {
					if strings.HasPrefix(dep, lib.path) {
						t.Errorf("pure package %s depends on %s (%s)", name, dep, lib.comment)
					}
				}
			}
		}
		for _, s := range thin {
			if name != s && !strings.HasPrefix(name, s+"/") {
				continue
			}
			for _, dep := range p.Deps {
				for _, f := range thinForbidden {
					if dep == mod+f || strings.HasPrefix(dep, mod+f+"/") {
						t.Errorf("%s depends on %s: the tray and window talk to the agent only through app/api/client", name, dep)
					}
				}
			}
		}
		// Nothing outside app/ may reach into app/: the engine, halda and
		// discovery are libraries the agent composes, never the other way round.
		// Benchmarks drive a running agent like any API client, so they may use
		// the API's public types and client, and nothing else of app/.
		if name != "" && !strings.HasPrefix(name, "app") && name != "homering" {
			for _, imp := range p.Imports {
				apiClient := imp == mod+"app/api/apitype" || imp == mod+"app/api/client"
				if strings.HasPrefix(name, "bench/") && apiClient {
					continue
				}
				if strings.HasPrefix(imp, mod+"app") {
					t.Errorf("%s imports %s: only app/ and main may import app packages", name, imp)
				}
			}
		}
	}
}

// TestPackageDocs requires every package to say what it is in a package
// comment, and every library package to keep it in doc.go, where the spec of
// its model and invariants lives (STYLE lesson 15).
func TestPackageDocs(t *testing.T) {
	for name, p := range listPackages(t) {
		if p.Doc == "" {
			t.Errorf("package %s has no package comment", name)
		}
		if name == "homering" || name == "app" || name == "frontend" {
			continue // main, the composition root and the embed shim document themselves in place
		}
		hasDoc := false
		for _, f := range p.GoFiles {
			hasDoc = hasDoc || f == "doc.go"
		}
		if !hasDoc {
			t.Errorf("package %s has no doc.go", name)
		}
	}
}

func TestPureCodeReadsNoClock(t *testing.T) {
	clock := regexp.MustCompile(`\btime\.(Now|Since|Until|Sleep|After|AfterFunc|Tick|NewTimer|NewTicker)\(`)
	pkgs := listPackages(t)
	for _, name := range clockless {
		p, ok := pkgs[name]
		if !ok {
			continue // not written yet
		}
		for _, f := range p.GoFiles {
			src, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if m := clock.Find(src); m != nil {
				t.Errorf("%s/%s calls %s: pure code takes time as an argument or event", name, f, m)
			}
		}
	}
}
