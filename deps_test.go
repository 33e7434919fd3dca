package main

import (
	"bytes"
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The dependency rules of ../shared/STYLE.md (lesson 10, "Dependency
// direction" and "The same rules as a list") and its package-doc rule (lesson
// 15), checked over the whole module by one test each. Each rule names why: a
// broken rule usually means a C library or a GUI toolkit leaked into code that
// must stay pure, testable and portable, or a layer reached past the one below.

const mod = "homering/"

// builds are the builds the rules hold for: the default one and the desktop
// one of build/build-desktop.sh (same tags), which adds only app/window's Wails
// half (window_desktop.go: Wails imports, no new module edge).
var builds = []struct{ name, tags string }{
	{"default", ""},
	{"desktop", "desktop,production,webkit2_41"},
}

// allowed is the layering as a table: for every package of the module, the
// module packages its non-test files may import. A package missing from the
// table, or an import its row does not list, fails TestDependencyRules: a new
// edge is a decision, made here with its reason. The rows follow STYLE's
// drawing where it draws the edge; an edge it does not draw carries a comment
// saying why it exists, and one that breaks the layering is marked TODO with
// the issue that removes it. Test files are not held to their row (they wire
// real adapters, STYLE lesson 17) but still obey the app/ and cLibs rules.
var allowed = map[string][]string{
	// L4 surfaces.
	"homering": {"app"},
	// app is the composition root (lesson 12): it builds and wires the
	// services, and its subcommands are the CLI.
	"app": {
		"app/agent", "app/api", "app/api/apitype", "app/api/client", "app/config", "app/node",
		"app/tray", "app/window", "engine/runner",
		"discovery/identity", "discovery/mdns", // headless, id and doctor build the identity and the mDNS services
		"engine/gguf",                                 // homering inspect
		"engine/modelgen",                             // homering gen-model
		"engine/chat", "engine/head", "engine/sample", // homering run: one-shot generation in this process, no agent
		"halda", "halda/lpsolve", "engine/profile/modelprof", // homering plan: Halda over profile files and a GGUF
		"engine/profile", // homering profile and the background profile's cache
		"app/api/openai", // run and chat refuse a temperature by the OpenAI API's rule and sentence
		"app/problem",    // headless words a taken chat API port as the status does
		"app/planner",    // homering run --gpu-layers auto: the agent's plan for this device alone
		"app/autostart",  // the tray sets up start at login where no installer does (macOS)
		"app/pull",       // homering pull without a running agent downloads in this process
	},
	"app/tray":   {"app/api/client", "app/api/apitype"}, // thin (lesson 11)
	"app/window": {"app/api/client", "app/api/apitype"}, // thin (lesson 11)
	"app/api": {
		// The one owner of the agent's state (issue 15 item 4): the API
		// reaches this device, its peers, the settings, the model list, the
		// plans and the progress bars through it, never a service directly,
		// and only translates HTTP to the agent's calls and back.
		"app/agent",
		"app/api/apitype", "frontend",
		"app/api/openai", "app/api/anthropic", "app/api/ollama", // the compatible APIs' translators
		// The one registry of user-facing problems: services return its
		// coded errors and this layer alone turns a Kind into an HTTP
		// status (chat.go kindStatus), so it must see the registry.
		"app/problem",
	},
	"app/api/client":        {"app/api/apitype"},
	"app/api/openai":        {"app/api/apitype"},
	"app/api/anthropic":     {"app/api/apitype"},
	"app/api/ollama":        {"app/api/apitype"},
	"app/api/apitype":       {"discovery/deviceid"}, // device IDs are typed, their JSON the readable text (issue 15 item 5)
	"app/api/apitype/tsgen": {},                     // reads apitype's source, not the package
	// Drives real binaries through the CLI and the HTTP API; reads the
	// memory cgroups it caps nodes with through the profiler's reader.
	"app/apptest": {"app/api/apitype", "engine/profile/sysinfo", "internal/testwait", "internal/testcgroup"},

	// L3 services.
	// The one owner of the agent's state (issue 15 item 4): the node, the
	// planner, the engine child, the kept ring job, calibration and the
	// background profile.
	"app/agent": {
		"app/node", "app/planner", "app/config", "app/problem", "app/api/apitype",
		"engine/runner",                   // the engine child: chats, ring heads and workers
		"engine/ring", "engine/ring/wire", // ring.FromHalda: the plan a ring job runs, on the runner's wire
		"engine/profile", "engine/profile/sysinfo", // this device's cached profile; its memory before a measurement
		"engine/profile/calib", "engine/profile/envelope", // calibration ratios learnt from runs, kept on disk
		"halda",
		"discovery/identity",                      // device IDs' short form in the log; pairing's errors become problem codes (node.go coded)
		"engine/ring/transport",                   // the links' refusals become problem codes (node.go coded)
		"discovery/deviceid",                      // the device map's looks at peers key them by typed ID (looks.go)
		"engine/gguf", "engine/profile/modelprof", // the model list: each GGUF's header and its Halda shape (models.go)
		"internal/bytesize", // sizes in the model list's labels and the load bar's words, as app/pull writes them (models.go, measured.go)
		"engine/chat",       // tool calling: a request with tools rendered by the model's template family (tools.go)
		"app/pull",          // model downloads, shown as Work items (issue 18 item 6)
		"engine/head",       // head.PickDraft: the speculative draft a chat model gets by itself (draft.go)
	},
	"app/node": {
		"discovery", "discovery/identity", "discovery/mdns", "halda", "app/config", "app/api/apitype",
		"engine/ring/transport", // the long-lived control link to each paired peer (issue 15 item 2)
		"app/problem",           // the problems it reports
	},
	// The one planner (issue 15 item 1): Halda's problem from this device's
	// and the peers' profiles, solved with lp_solve.
	"app/planner": {
		"halda", "halda/lpsolve", "app/api/apitype",
		"app/config",                                                                 // config.Settings: the model, context and this device's memory budget
		"app/node",                                                                   // node.PeerProfile: the peers' profiles the control links keep fresh
		"engine/profile",                                                             // this device's cached profile; Unmeasured for a peer without one
		"engine/profile/calib", "engine/profile/modelprof", "engine/profile/sysinfo", // calibration, the model's shape, free memory now
		"engine/ring",        // ring.Adopt: whether the kept ring job still fits the new plan
		"engine/ring/wire",   // wire.MaxStreams: a plan admits no more conversations than the ring carries
		"discovery/deviceid", // its peer table and plans key devices by their typed ID (issue 15 item 5)
	},
	"app/config":    {},
	"app/autostart": {}, // start at login on macOS: a LaunchAgent plist, pure Go
	// Model downloads (issue 18 item 6): a file is renamed to NAME.gguf only
	// once it parses as a GGUF.
	"app/pull":    {"engine/gguf", "internal/bytesize"},
	"app/problem": {"app/api/apitype"}, // the one registry of user-facing problems (issue 15 item 4)
	// The process boundary (issue 15 item 3): the supervisor and the
	// child's loop and protocol; the ring's jobs are engine/ring/job's.
	"engine/runner": {
		"engine/head",
		"engine/ggml",               // the GPU and CPU backend libraries the child loads when it starts (gpu.go)
		"engine/ring/job",           // the ring's jobs, head and worker; its types on the pipe are aliased here
		"engine/ring/wire", "halda", // the protocol carries the ring's plan and the problem a loss is re-planned from
		"discovery/identity",     // ring_generate's identity directory, loaded before the job starts
		"discovery/deviceid",     // the protocol's typed device IDs (issue 15 item 5)
		"engine/profile/sysinfo", // the child's anonymous memory, read by the supervisor
		"engine/ring/transport",  // one count of what the ring's links refuse, head and worker, told the agent (EvRefused)
		// The protocol's generate parameters become engine/head's Request
		// (messages, sampling), and the ring head's vocabulary goes to
		// head.Run, the one generation loop; no prompt, sampler or
		// detokenizer of the runner's own.
		"engine/chat", "engine/sample", "engine/llama",
	},
	// The ring's jobs in the runner child (issue 15 item 3): the head's
	// (dials, plans, re-plans, kept jobs; the Model of engine/head's one
	// loop) and the worker's (slices, windows, the successor's link).
	"engine/ring/job": {
		"engine/ring", "engine/ring/wire", "engine/ring/driver", // the ring's policies and its event loop (lesson 9: the child owns the ring's data path)
		"engine/ring/transport",      // the links, TLS pinned to device IDs
		"engine/ring/ggmlengine",     // the driver's Engine over the mapped model or slices
		"engine/profile/modelprof",   // the measured routing a MoE model's windows count, kept for the next job's prefetch
		"engine/ggml", "engine/gguf", // the head's mapped model; a worker's slices and the model index it fetched
		"engine/llama",           // the head's vocabulary, for the generation loop
		"engine/slice",           // the head serves weight slices; a worker fetches and caches them
		"discovery/identity",     // the device IDs the ring links authenticate
		"discovery/deviceid",     // the plan's and the links' typed device IDs
		"engine/profile/sysinfo", // memory pressure around ring jobs, kept jobs' memory bounds
		// A loss is re-planned in the child (issue 15 item 3): Halda over
		// the ring's problem, which the agent sends with ring_generate,
		// solved with lp_solve (ring.PlanWithout takes the solver).
		"halda", "halda/lpsolve",
		"engine/head", // the ring head's Request is a head.Verifier: speculation verifies drafts through the ring
	},
	"engine/head": {
		"engine/ggml", "engine/llama",
		"engine/chat", "engine/sample", // prompt formatting and sampling, leaves of their own
		"engine/ring", // ring.CommonPrefix: the KV prefix a request keeps, the rule a kept ring job follows too
		"engine/gguf", // PickDraft reads candidate drafts' token lists from their headers, mapping nothing
	},
	"engine/profile": {
		"engine/ggml", "engine/gguf", "halda",
		"engine/profile/envelope", "engine/profile/sysinfo", // its cache format and the OS's memory and disk figures
		"engine/ring/transport", // link.go: RTT and bandwidth over a peer's link
	},
	"engine/profile/calib":     {"halda"},
	"engine/profile/modelprof": {"engine/gguf", "halda", "engine/profile/envelope"}, // measured routing kept on disk, checksummed as profiles are
	"engine/profile/envelope":  {},
	"engine/profile/sysinfo":   {},

	// L2 adapters.
	"halda/lpsolve":         {"halda"},
	"engine/ggml":           {"engine/gguf"}, // the layout of the file it maps, validated in pure Go first (lesson 9)
	"engine/llama":          {"engine/chat"}, // templates llama.cpp does not know fall back to chat.ChatML
	"discovery/mdns":        {"discovery", "discovery/identity"},
	"engine/ring/transport": {"discovery/identity", "engine/ring/wire"}, // wire: the ring band and the protocol range of the one frame table (registry.go)
	"engine/ring/driver": {
		"engine/ring", "engine/ring/wire", "engine/ring/transport", // the event loop that steps a ring.Session
		"discovery/deviceid",     // links and stats per device of the plan
		"engine/profile/sysinfo", // its precise clock times each window's compute (QueryPerformanceCounter on Windows)
	},
	// The driver's ggml adapter (issue 15 item 3): a package of its own,
	// since engine/ggml may not import the ring (an L2 adapter of ggml's C,
	// below the ring's wire) and the driver keeps only its event loop.
	"engine/ring/ggmlengine": {"engine/ggml", "engine/ring", "engine/ring/wire"},
	"engine/slice": {
		"engine/gguf",                               // a slice is a valid GGUF of some layers' tensors
		"engine/ring/transport", "engine/ring/wire", // serve.go: the head serves slices over a ring link of their own
	},
	"engine/modelgen":   {"engine/gguf", "engine/ggml/quant"}, // writes GGUF files for tests and benchmarks, quantized by ggml's own quantizers
	"engine/ggml/quant": {},

	// L1 pure logic, L0 leaves.
	"engine/ring":        {"engine/ring/wire", "halda", "discovery/deviceid"}, // deviceid: the plan's devices (issue 15 item 5)
	"engine/ring/wire":   {"discovery/deviceid"},                              // job frames carry typed device IDs (issue 15 item 5)
	"halda":              {"discovery/deviceid"},                              // a device's typed ID rides into the plan, so no one parses a name (issue 15 item 5)
	"engine/gguf":        {},
	"engine/sample":      {},
	"engine/chat":        {},
	"discovery":          {"discovery/identity"},
	"discovery/identity": {"discovery/deviceid"}, // DeviceID is deviceid.ID (an alias): its callers keep their names
	// The one device-ID type (issue 15 item 5): a leaf without crypto or
	// files, so that the pure cores (halda, the ring's wire) can carry it.
	"discovery/deviceid": {},
	"frontend":           {},

	// Test and benchmark support.
	"halda/haldatest":      {"halda"},
	"engine/ring/ringtest": {"engine/ring", "engine/ring/wire", "discovery/deviceid"},
	"engine/enginetest":    {}, // its tests import the engines
	"engine/gputest":       {}, // its tests load a GPU backend into engine/ggml's process
	"internal/testlog":     {},
	"internal/bytesize":    {},                                               // a byte count for people: the one formatter of messages and progress
	"internal/testwait":    {},                                               // the tests' one wait helper
	"internal/testdir":     {},                                               // tests: a scratch directory that Wine can remove
	"internal/testcgroup":  {},                                               // tests: a limited memory cgroup to run a process in
	"internal/jsontags":    {},                                               // tests: every JSON protocol field spells its name
	"bench/enginebench":    {"engine/ggml", "engine/llama"},                  // the window engine against llama.cpp
	"bench/profilebench":   {"engine/ggml", "engine/profile/calib", "halda"}, // decode times into a calibrated profile
	// One-device baselines for bench/ring.sh; the rig's cgroups are read
	// through the profiler's reader.
	"bench/ringbench":   {"app/api/apitype", "engine/head", "engine/llama", "engine/profile/sysinfo", "engine/sample"},
	"bench/rig/linksim": {},
	// Speculation on one device and through an in-process ring of three,
	// on a generated target/draft pair (issue 19 item 2).
	"bench/specbench": {"engine/head", "engine/modelgen", "engine/ring/job", "engine/ring/wire", "discovery/identity", "discovery/deviceid"},

	// GPU tests: a backend loaded into a process changes every later
	// window's choices, so they live apart from the CPU-only tests.
	"internal/testgpu":             {"engine/ggml"}, // the backend library build/test.sh names, checked or loaded
	"engine/ring/driver/gpudriver": {},              // its tests load a GPU backend into the driver's process
}

// cLibs are the outside libraries that make a package cgo or GUI-bound; each may
// be imported directly by exactly the packages listed, and at least one of them
// does (in the default or the desktop build), so that no entry goes stale.
var cLibs = []struct {
	path    string   // import path prefix
	owners  []string // the only packages that may import it directly
	comment string
}{
	{"github.com/ollama/ollama/llama", []string{"engine/llama"}, "llama.cpp: 5-minute build, only the tokenizer and the reference use it"},
	{"github.com/ollama/ollama/ml/backend/ggml", []string{"engine/ggml", "engine/ggml/quant"}, "ggml: our window engine, and its quantizers for the generator"},
	{"github.com/draffensperger/golp", []string{"halda/lpsolve"}, "lp_solve: halda stays pure Go behind the Solver interface"},
	{"github.com/grandcat/zeroconf", []string{"discovery/mdns"}, "mDNS: the peer table stays pure"},
	{"fyne.io/systray", []string{"app/tray"}, "the tray is a thin client of the API"},
	{"github.com/wailsapp/wails", []string{"app/window", "app"}, "the window is a thin client of the API"},
}

// cgoOwners are the only packages with files that say import "C" (go list's
// CgoFiles): our own C is kept next to the library it calls.
var cgoOwners = map[string]string{
	"engine/ggml":        "our C on ggml's C API (engine.c)",
	"engine/ggml/quant":  "ggml_quantize_chunk with an importance matrix, for engine/modelgen (which engine/ggml's tests import, so it cannot be engine/ggml)",
	"engine/llama":       "a shim over llama.h for what ollama's wrapper does not expose",
	"engine/ring/driver": "trim_linux.go: glibc's malloc_trim after a ring job; libc, no library",
}

// pure packages: no cgo or GUI library even transitively, nothing outside the
// standard library and the module, and no direct import of the listed standard
// packages (addresses come as net/netip, processes are never started,
// randomness comes in as a seeded *rand.Rand). Those marked clockless also
// never read the clock: time comes in as an event or a now argument (see
// TestPureCodeReadsNoClock).
var pure = map[string][]string{
	"halda":              {"net", "os", "os/exec", "math/rand", "math/rand/v2", "time", "unsafe"}, // plans depend only on the Problem
	"engine/gguf":        {"net", "os/exec"},
	"engine/sample":      {"net", "os", "os/exec", "math/rand"},
	"engine/ring":        {"net", "os", "os/exec"},
	"engine/ring/wire":   {"net", "os", "os/exec"},
	"discovery":          {"net", "os", "os/exec", "math/rand", "math/rand/v2"},
	"app/api/apitype":    {"net", "os/exec"},
	"app/api/openai":     {"net", "os/exec"},
	"app/api/anthropic":  {"net", "os/exec"},
	"app/api/ollama":     {"net", "os/exec"},
	"app/config":         {"net", "os/exec"},
	"app/autostart":      {"net", "os/exec"}, // writes a plist; starts nothing
	"discovery/identity": {"net", "os/exec"},
	"discovery/deviceid": {"net", "os", "os/exec", "math/rand", "math/rand/v2", "time", "unsafe"}, // a value and its text forms
}

// noCgo packages do not link runtime/cgo even through the standard library
// (net, os/user): they build and run the same with CGO_ENABLED=0 on every OS.
var noCgo = []string{"halda", "engine/ring", "engine/ring/wire", "discovery/deviceid"}

// thin surfaces may only talk to the agent through its API client.
var thin = []string{"app/tray", "app/window"}
var thinForbidden = []string{"engine", "halda", "discovery", "app/node", "app/agent"}

// thinValues are the packages under thinForbidden that thin surfaces may
// still reach: values the API's types carry, with no service behind them.
var thinValues = []string{
	"discovery/deviceid", // apitype's device IDs (issue 15 item 5): a value and its text
}

// clockless packages are pure state machines and functions: given the same
// inputs they give the same outputs, so they never read the clock or sleep.
var clockless = []string{"halda", "engine/sample", "engine/ring", "engine/ring/wire", "discovery", "discovery/deviceid"}

type pkg struct {
	Dir            string
	ImportPath     string
	Name           string
	Imports        []string
	TestImports    []string
	XTestImports   []string
	Deps           []string
	Doc            string
	GoFiles        []string
	CgoFiles       []string
	IgnoredGoFiles []string
}

// listPackages lists the module's packages for a build. cgo is on, as in
// build/env.sh: the graph is the one of the real binary. -e: a package that
// does not build right now must not hide its imports.
func listPackages(t *testing.T, tags string) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json", "-tags", tags, "./...")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -tags %q: %v\n%s", tags, err, stderr.Bytes())
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
	if len(all) < 3 {
		t.Fatalf("go list found only %d packages", len(all))
	}
	return all
}

// under reports whether package name is dir or inside it.
func under(name, dir string) bool { return name == dir || strings.HasPrefix(name, dir+"/") }

// standard reports whether an import path is the standard library's.
func standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".") && first != strings.TrimSuffix(mod, "/")
}

func TestDependencyRules(t *testing.T) {
	used := map[string]bool{} // "pkg -> dep" edges seen, over all builds
	importers := map[string][]string{}
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			pkgs := listPackages(t, b.tags)
			for name := range allowed {
				if _, ok := pkgs[name]; !ok {
					// Not an error: a row may be written just before its
					// package lands, in a tree several people commit to.
					t.Logf("the table has a row for %s, which does not exist: delete it unless the package is coming", name)
				}
			}
			for name, p := range pkgs {
				checkPackage(t, name, p, used)
				for _, imp := range p.Imports {
					importers[imp] = append(importers[imp], name)
				}
			}
		})
	}
	for _, lib := range cLibs {
		found := false
		for imp, by := range importers {
			if strings.HasPrefix(imp, lib.path) {
				for _, o := range lib.owners {
					found = found || slices.Contains(by, o)
				}
			}
		}
		if !found {
			t.Errorf("none of %v imports %s: the cLibs entry is stale", lib.owners, lib.path)
		}
	}
	// An allowed edge nobody uses is harmless, but worth knowing about when
	// the table is next edited.
	var unused []string
	for name, row := range allowed {
		for _, dep := range row {
			if !used[name+" -> "+dep] {
				unused = append(unused, name+" -> "+dep)
			}
		}
	}
	sort.Strings(unused)
	for _, e := range unused {
		t.Logf("allowed but unused: %s", e)
	}
}

func checkPackage(t *testing.T, name string, p pkg, used map[string]bool) {
	row, ok := allowed[name]
	if !ok {
		t.Errorf("package %s is not in deps_test.go's table: add its row (the module packages it may import, with reasons)", name)
	}
	for _, imp := range p.Imports {
		dep, internal := strings.CutPrefix(imp, mod)
		if !internal {
			continue
		}
		used[name+" -> "+dep] = true
		if ok && !slices.Contains(row, dep) {
			t.Errorf("%s imports %s, which its row in deps_test.go does not allow (allowed: %v); add the edge with its reason if the layering permits it", name, dep, row)
		}
	}

	testImports := slices.Concat(p.Imports, p.TestImports, p.XTestImports)
	for _, imp := range testImports {
		for _, lib := range cLibs {
			if strings.HasPrefix(imp, lib.path) && !slices.Contains(lib.owners, name) {
				t.Errorf("%s imports %s; only %v may (%s)", name, imp, lib.owners, lib.comment)
			}
		}
	}

	if len(p.CgoFiles) > 0 {
		if _, ok := cgoOwners[name]; !ok {
			t.Errorf("%s has import \"C\" in %v; only %v may: put the C next to the library it calls", name, p.CgoFiles, keys(cgoOwners))
		}
	}

	if forbidden, ok := pure[name]; ok {
		for _, imp := range p.Imports {
			if slices.Contains(forbidden, imp) {
				t.Errorf("pure package %s imports %s directly", name, imp)
			}
		}
		for _, dep := range p.Deps {
			if !standard(dep) && !strings.HasPrefix(dep, mod) {
				t.Errorf("pure package %s depends on %s: it uses only the standard library and the module", name, dep)
			}
			for _, lib := range cLibs {
				if strings.HasPrefix(dep, lib.path) {
					t.Errorf("pure package %s depends on %s (%s)", name, dep, lib.comment)
				}
			}
		}
	}
	if slices.Contains(noCgo, name) && slices.Contains(p.Deps, "runtime/cgo") {
		t.Errorf("%s links runtime/cgo: it must build with CGO_ENABLED=0 (the solver is behind halda.Solver, the sockets behind transport)", name)
	}

	for _, s := range thin {
		if !under(name, s) {
			continue
		}
		for _, dep := range p.Deps {
			for _, f := range thinForbidden {
				if under(dep, mod+f) && !slices.Contains(thinValues, strings.TrimPrefix(dep, mod)) {
					t.Errorf("%s depends on %s: the tray and window talk to the agent only through app/api/client", name, dep)
				}
			}
		}
	}

	// Nothing outside app/ may reach into app/, not even its tests: the
	// engine, halda and discovery are libraries the agent composes, never the
	// other way round. Benchmarks drive a running agent like any API client,
	// so they may use the API's public types and client, and nothing else of
	// app/.
	if !under(name, "app") && name != "homering" {
		for _, imp := range testImports {
			apiClient := imp == mod+"app/api/apitype" || imp == mod+"app/api/client"
			if under(name, "bench") && apiClient {
				continue
			}
			if under(imp, mod+"app") {
				t.Errorf("%s imports %s: only app/ and main may import app packages", name, imp)
			}
		}
	}
}

func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// specDocs are the packages whose doc.go must be a spec, not a stub (lesson
// 15: pure packages describe their model and invariants), in addition to the
// pure ones: at least 30 words.
var specDocs = []string{
	"halda", "halda/lpsolve", "halda/haldatest",
	"engine/profile", "engine/profile/sysinfo", "engine/profile/calib", "engine/profile/modelprof", "engine/profile/envelope",
}

// TestPackageDocs requires every package to say what it is in a package
// comment of at least one sentence, kept in doc.go and only there, where the
// spec of its model and invariants lives (STYLE lesson 15). Exempt from doc.go:
// main at the root (main.go is the whole package, and the comment is there)
// and packages with only test files (their tests say what they prove; none
// today). The module has no generated packages.
func TestPackageDocs(t *testing.T) {
	sentence := regexp.MustCompile(`^(Package|Command) \S+ \S.*[.!?:]`)
	for name, p := range listPackages(t, "") {
		if p.Doc == "" && len(p.GoFiles)+len(p.CgoFiles) > 0 {
			t.Errorf("package %s has no package comment", name)
		}
		if name == "homering" || len(p.GoFiles)+len(p.CgoFiles) == 0 {
			continue
		}
		files := slices.Concat(p.GoFiles, p.CgoFiles, p.IgnoredGoFiles)
		if !slices.Contains(files, "doc.go") {
			t.Errorf("package %s has no doc.go", name)
			continue
		}
		for _, f := range files {
			file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, f), nil, parser.ParseComments|parser.PackageClauseOnly)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			text := ""
			if file.Doc != nil {
				text = file.Doc.Text()
			}
			if f != "doc.go" {
				if text != "" {
					t.Errorf("%s/%s has a package comment: it belongs in doc.go only", name, f)
				}
				continue
			}
			words := len(strings.Fields(text))
			switch {
			case !sentence.MatchString(strings.Join(strings.Fields(text), " ")) || words < 8:
				t.Errorf("%s/doc.go: the package comment should start %q and say in at least a sentence what the package is", name, "Package "+p.Name)
			case words < 30 && (slices.Contains(specDocs, name) || pure[name] != nil):
				t.Errorf("%s/doc.go: the package comment is too short to be a spec (%d words, want 30 or more)", name, words)
			}
		}
	}
}

func TestPureCodeReadsNoClock(t *testing.T) {
	clock := regexp.MustCompile(`\btime\.(Now|Since|Until|Sleep|After|AfterFunc|Tick|NewTimer|NewTicker)\(`)
	pkgs := listPackages(t, "")
	for _, name := range clockless {
		p, ok := pkgs[name]
		if !ok {
			t.Errorf("clockless package %s does not exist: update the list", name)
			continue
		}
		for _, f := range slices.Concat(p.GoFiles, p.CgoFiles) {
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
