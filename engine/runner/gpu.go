package runner

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"homering/engine/ggml"
)

// GGMLVersion is the version of the pinned github.com/ollama/ollama module
// whose ggml this binary is built from. A GPU backend library must come from
// the same ggml headers (build/gpu-lib.sh builds it so): ollama changed
// ggml_backend_dev_props, and a library from other headers loads and then
// misreads it. The directories beside the executable are named by it, so a
// binary never loads another version's library. A test holds it equal to
// go.mod's.
const GGMLVersion = "v0.17.4"

// EnvGPU and EnvGPUDir are the environment's say over GPU backends:
// HOMERING_GPU=off loads none (the agent sets it for its children when the
// gpu setting is off); HOMERING_GPU_DIR names the directory to load them
// from instead of the one beside the executable.
const (
	EnvGPU    = "HOMERING_GPU"
	EnvGPUDir = "HOMERING_GPU_DIR"
)

// GPUDirs are the directories beside the executable exe that GPU backend
// libraries (libggml-vulkan, libggml-cuda and their libggml-base) load
// from, in order:
//
//	<exe dir>/lib/homering-gpu/ollama-v0.17.4/        the tarball, the Windows zip, bin/ of a checkout
//	<exe dir>/../lib/homering/gpu/ollama-v0.17.4/     the .deb (/usr/bin/homering: /usr/lib/homering/gpu/…)
//
// A release that ships GPU libraries puts them in the first (the .deb in
// the second); `build/gpu-lib.sh vulkan DIR` builds into any of them.
func GPUDirs(exe string) []string { return libDirs(exe, "gpu") }

// CPUDirs are GPUDirs' counterparts for the CPU backend's variant
// libraries (libggml-cpu-x64/-haswell/-icelake.so or ggml-cpu-*.dll, with
// their libggml-base): lib/homering-cpu/ollama-v0.17.4 beside the
// executable, ../lib/homering/cpu/ollama-v0.17.4 for the .deb.
func CPUDirs(exe string) []string { return libDirs(exe, "cpu") }

func libDirs(exe, kind string) []string {
	d, v := filepath.Dir(exe), "ollama-"+GGMLVersion
	return []string{
		filepath.Join(d, "lib", "homering-"+kind, v),
		filepath.Join(d, "..", "lib", "homering", kind, v),
	}
}

// libDir is where one kind of backend library loads from: the directory
// named on the command line, else the one the environment variable envDir
// names, else the first of dirs(exe) that exists; "" and why not.
func libDir(what, named, envDir string, dirs func(string) []string, getenv func(string) string, isDir func(string) bool, exe string) (dir, why string) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if isDir == nil {
		isDir = func(p string) bool { fi, err := os.Stat(p); return err == nil && fi.IsDir() }
	}
	switch {
	case named != "":
		return named, "named on the command line"
	case getenv(envDir) != "":
		return getenv(envDir), "named by " + envDir
	}
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return "", fmt.Sprintf("this program's path is unknown (%v), so no %s library beside it", err, what)
		}
	}
	ds := dirs(exe)
	for _, d := range ds {
		if isDir(d) {
			return d, "beside this program"
		}
	}
	return "", fmt.Sprintf("no %s library is installed (looked in %s; %s names another directory)", what, strings.Join(ds, " and "), envDir)
}

// GPUOptions say where GPU backends may come from.
type GPUOptions struct {
	// Off is this device's gpu setting turned off (app/config Settings.GPU).
	Off bool
	// Dir is a directory named on the command line (homering profile
	// --gpu-dir); "" looks at EnvGPUDir, then GPUDirs.
	Dir    string
	Getenv func(string) string // nil: os.Getenv
	// Exe is this executable's path; "": os.Executable.
	Exe string
	// IsDir reports whether a directory exists; nil: os.Stat.
	IsDir func(string) bool
	// Probe loads the libraries in a child process first, and loads them
	// here only when the child came back: a driver that crashes on load
	// takes the probe down, not this process (the runner sets it).
	Probe bool
	// ProbeCmd makes the probe's command; nil re-runs this program with
	// its arguments and EnvGPUProbe set, which Main answers.
	ProbeCmd func() *exec.Cmd
}

// EnvGPUProbe, set to a directory, makes Main a GPU probe: it loads that
// directory's backends, prints "gpus N" and returns.
const EnvGPUProbe = "HOMERING_GPU_PROBE"

// StampFile is the file build/gpu-lib.sh writes beside the libraries it
// builds: the ggml source they were built from.
const StampFile = "homering-ggml.txt"

// checkStamp refuses a directory whose libraries (what: GPU or CPU) were
// not built from this binary's ggml (build/gpu-lib.sh's stamp names the
// ollama module version).
func checkStamp(dir, what string) error {
	want := "github.com/ollama/ollama " + GGMLVersion
	b, err := os.ReadFile(filepath.Join(dir, StampFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the %s libraries in %s were not built by build/gpu-lib.sh (no %s), so they may come from other ggml headers than this Homering's (%s); build them with build/gpu-lib.sh", what, dir, StampFile, want)
	case err != nil:
		return fmt.Errorf("the %s libraries in %s cannot be checked: %w", what, dir, err)
	}
	if got := strings.TrimSpace(string(b)); got != want {
		return fmt.Errorf("the %s libraries in %s were built from %s, this Homering needs %s; build them again with build/gpu-lib.sh", what, dir, got, want)
	}
	return nil
}

// probe loads dir's backends in a child process and returns the GPUs it saw.
func probe(dir string, o GPUOptions) (int, error) {
	var cmd *exec.Cmd
	if o.ProbeCmd != nil {
		cmd = o.ProbeCmd()
	} else {
		exe, err := os.Executable()
		if err != nil {
			return 0, err
		}
		cmd = exec.Command(exe, os.Args[1:]...)
		cmd.Env = os.Environ()
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, EnvGPUProbe+"="+dir)
	var stderr strings.Builder
	cmd.Stdin, cmd.Stderr = nil, &stderr
	childAttrs(cmd) // no console window; dies with this process
	timer := time.AfterFunc(probeTimeout, func() {
		if cmd.Process != nil {
			_ = cmd.Process.Kill() // a hung driver: the probe's failure is what counts
		}
	})
	out, err := cmd.Output()
	if !timer.Stop() { // it fired: the probe was killed
		return 0, fmt.Errorf("the probe did not finish in %v", probeTimeout)
	}
	if err != nil {
		return 0, fmt.Errorf("%v: %s", err, lastWords(stderr.String()))
	}
	var n int
	if _, err := fmt.Sscanf(strings.TrimSpace(lastLine(string(out))), "gpus %d", &n); err != nil {
		return 0, fmt.Errorf("the probe answered %q", strings.TrimSpace(string(out)))
	}
	return n, nil
}

// probeTimeout bounds a probe: loading a backend and listing its devices
// takes a second or two; a driver that hangs is as bad as one that crashes.
const probeTimeout = 60 * time.Second

// lastWords picks what a dead probe said that matters: the signal or
// panic line of a crash report, else its last line.
func lastWords(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "SIG") || strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") {
			return l
		}
	}
	return lastLine(s)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// probeMain is a probe child's whole work.
func probeMain(dir string, out io.Writer) error {
	n := ggml.LoadBackends(dir)
	_, err := fmt.Fprintf(out, "gpus %d\n", n)
	return err
}

// GPULoad is what LoadGPU did.
type GPULoad struct {
	Dir     string   // the directory loaded from; "" none
	GPUs    int      // the GPU devices ggml sees afterwards
	Devices []string // their names (Vulkan0, CUDA0, …), in ggml's order
	// Why says where Dir came from, or why nothing was loaded, for a log
	// line or a refusal ("--gpu-layers needs a GPU: …").
	Why string
	CPU CPULoad // the CPU backend chosen before (LoadCPU)
}

// FindGPUDir picks the directory to load GPU backends from, "" for none,
// and says why. Off wins (HOMERING_GPU=off, then the setting); then the
// directory named on the command line, HOMERING_GPU_DIR, and the first of
// GPUDirs that exists.
func FindGPUDir(o GPUOptions) (dir, why string) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	switch v := strings.TrimSpace(getenv(EnvGPU)); {
	case strings.EqualFold(v, "off"):
		return "", EnvGPU + "=off"
	case o.Off:
		return "", "the gpu setting is off"
	}
	return libDir("GPU", o.Dir, EnvGPUDir, GPUDirs, getenv, o.IsDir, o.Exe)
}

// LoadGPU loads the GPU backend libraries FindGPUDir picks into this
// process. Call it once, before any model is opened: ggml's backend
// registry is global and never unloads. The runner child calls it at start
// (the agent passes its gpu setting down as HOMERING_GPU=off), `homering
// run` and `homering profile` before they open a model.
//
// It loads the CPU backend's variant first (LoadCPU, with this process's
// environment and executable): every program that loads GPU backends at
// start runs models, and the CPU variant must be chosen before the first
// model opens.
func LoadGPU(o GPUOptions, log *slog.Logger) GPULoad {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cpu := LoadCPU(CPUOptions{}, log)
	g := loadGPU(o, log)
	g.CPU = cpu
	return g
}

func loadGPU(o GPUOptions, log *slog.Logger) GPULoad {
	dir, why := FindGPUDir(o)
	if dir == "" {
		// Metal is compiled in on Apple silicon: a GPU without a library.
		log.Debug("no GPU backend loaded", "why", why)
		return GPULoad{GPUs: ggml.GPUCount(), Devices: gpuNames(), Why: why}
	}
	if err := checkStamp(dir, "GPU"); err != nil {
		log.Warn("GPU libraries refused", "err", err)
		return GPULoad{Why: err.Error()}
	}
	if o.Probe {
		n, err := probe(dir, o)
		switch {
		case err != nil:
			why = fmt.Sprintf("loading the GPU libraries in %s crashed a probe process (%v): running on the CPU; %s=off hides them", dir, err, EnvGPU)
			log.Warn("GPU libraries refused", "why", why)
			return GPULoad{Why: why}
		case n == 0:
			why = fmt.Sprintf("no GPU appeared after loading the libraries in %s (%s): no backend library there, or no driver for it", dir, why)
			log.Warn("no GPU backend loaded", "why", why)
			return GPULoad{Why: why}
		}
	}
	n := ggml.LoadBackends(dir)
	if n == 0 {
		why = fmt.Sprintf("no GPU appeared after loading the libraries in %s (%s): no backend library there, or no driver for it", dir, why)
		log.Warn("no GPU backend loaded", "why", why)
		return GPULoad{Why: why}
	}
	names := gpuNames()
	log.Info("GPU backend loaded", "dir", dir, "from", why, "gpus", strings.Join(names, ","))
	return GPULoad{Dir: dir, GPUs: n, Devices: names, Why: why}
}

func gpuNames() []string {
	var names []string
	for _, g := range ggml.GPUDevices() {
		names = append(names, g.Name)
	}
	return names
}

// EnvCPU and EnvCPUDir are the environment's say over the CPU backend:
// HOMERING_CPU=x64, haswell or icelake forces that variant (one this CPU
// cannot run is refused: every model open fails with the reason), and
// HOMERING_CPU=built-in the backend compiled into the binary;
// HOMERING_CPU_DIR names the directory of the variant libraries instead of
// CPUDirs.
const (
	EnvCPU    = "HOMERING_CPU"
	EnvCPUDir = "HOMERING_CPU_DIR"
)

// CPUOptions say where the CPU backend's variants may come from; the zero
// value is this process's environment and executable.
type CPUOptions struct {
	Dir    string              // named on a command line; "": EnvCPUDir, then CPUDirs
	Getenv func(string) string // nil: os.Getenv
	Exe    string              // "": os.Executable
	IsDir  func(string) bool   // nil: os.Stat
}

// CPULoad is what LoadCPU did.
type CPULoad struct {
	// Variant is the CPU backend in use (ggml.CPUVariant): x64, haswell,
	// icelake, or ggml.BuiltinCPU when no variant library is.
	Variant string
	Path    string   // the library loaded; "" for the built-in backend
	Runs    []string // the variants found that this CPU can run, best first
	Why     string   // why this one, for a log line
	// Err is a refusal: the variant EnvCPU forces cannot run here or is
	// not installed. ggml.Open fails with it too (ggml.RefuseCPU).
	Err error
}

var (
	cpuOnce sync.Once
	cpuDone CPULoad
)

// LoadCPU chooses this process's CPU backend, once, before any model
// opens: the variant EnvCPU forces, else the best of the variant libraries
// (ggml's ggml_backend_score, from the CPUID bits) in the directory named
// by o.Dir, EnvCPUDir or beside the executable (the same search as the
// GPU libraries', CPUDirs); without a library, the built-in backend (a
// development build is compiled for its own machine already). Later calls
// return the first call's result.
func LoadCPU(o CPUOptions, log *slog.Logger) CPULoad {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cpuOnce.Do(func() {
		cpuDone = loadCPU(o)
		if cpuDone.Err != nil {
			ggml.RefuseCPU(cpuDone.Err)
			log.Error("CPU backend refused", "err", cpuDone.Err)
			return
		}
		log.Info("CPU backend", "variant", cpuDone.Variant, "why", cpuDone.Why, "path", cpuDone.Path)
	})
	return cpuDone
}

// CPUVariantFile is the file name of a variant library on this OS.
func CPUVariantFile(variant string) string {
	if runtime.GOOS == "windows" {
		return "ggml-cpu-" + variant + ".dll"
	}
	return "libggml-cpu-" + variant + ".so"
}

func loadCPU(o CPUOptions) CPULoad {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	force := strings.TrimSpace(getenv(EnvCPU))
	builtin := CPULoad{Variant: ggml.CPUVariant()}
	if strings.EqualFold(force, ggml.BuiltinCPU) {
		builtin.Why = EnvCPU + "=" + force
		return builtin
	}
	dir, why := libDir("CPU", o.Dir, EnvCPUDir, CPUDirs, getenv, o.IsDir, o.Exe)
	if dir == "" {
		if force != "" {
			return CPULoad{Err: fmt.Errorf("%s=%s asks for a CPU variant library, but %s", EnvCPU, force, why)}
		}
		builtin.Why = why
		return builtin
	}
	if err := checkStamp(dir, "CPU"); err != nil {
		if force != "" {
			return CPULoad{Err: fmt.Errorf("%s=%s: %w", EnvCPU, force, err)}
		}
		builtin.Why = err.Error()
		return builtin
	}
	prefix, suffix, _ := strings.Cut(CPUVariantFile("*"), "*")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return CPULoad{Variant: builtin.Variant, Why: err.Error()}
	}
	type found struct {
		name, path string
		score      int
	}
	var all []found
	var names []string
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, prefix) || !strings.HasSuffix(n, suffix) || e.IsDir() {
			continue
		}
		f := found{name: strings.TrimSuffix(strings.TrimPrefix(n, prefix), suffix), path: filepath.Join(dir, n)}
		if f.score, err = ggml.CPUScore(f.path); err != nil {
			continue // not loadable here: as if absent
		}
		all = append(all, f)
		names = append(names, f.name)
	}
	slices.SortStableFunc(all, func(a, b found) int { return b.score - a.score })
	var runs []string
	for _, f := range all {
		if f.score > 0 {
			runs = append(runs, f.name)
		}
	}
	pick := -1
	switch {
	case force != "":
		pick = slices.IndexFunc(all, func(f found) bool { return strings.EqualFold(f.name, force) })
		switch {
		case pick < 0:
			return CPULoad{Runs: runs, Err: fmt.Errorf("%s=%s names no CPU variant in %s (it holds %s)", EnvCPU, force, dir, strings.Join(names, ", "))}
		case all[pick].score == 0:
			return CPULoad{Runs: runs, Err: fmt.Errorf("%s=%s is refused: this CPU lacks instructions the %s variant is built for (it can run %s)", EnvCPU, force, all[pick].name, strings.Join(append(runs, ggml.BuiltinCPU), ", "))}
		}
		why = EnvCPU + "=" + force
	case len(runs) > 0:
		pick = 0
		why = fmt.Sprintf("the best of %s for this CPU (%s)", strings.Join(names, ", "), why)
	default:
		builtin.Runs, builtin.Why = runs, fmt.Sprintf("this CPU runs none of the CPU variants in %s", dir)
		return builtin
	}
	f := all[pick]
	if err := ggml.UseCPU(f.path, f.name); err != nil {
		if force != "" {
			return CPULoad{Runs: runs, Err: fmt.Errorf("%s=%s: %w", EnvCPU, force, err)}
		}
		return CPULoad{Variant: ggml.CPUVariant(), Runs: runs, Why: err.Error()}
	}
	return CPULoad{Variant: ggml.CPUVariant(), Path: f.path, Runs: runs, Why: why}
}
