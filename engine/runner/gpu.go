package runner

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"errors"
	"homering/engine/ggml"
	"io"
	"io/fs"
	"os/exec"
	"time"
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
func GPUDirs(exe string) []string {
	d, v := filepath.Dir(exe), "ollama-"+GGMLVersion
	return []string{
		filepath.Join(d, "lib", "homering-gpu", v),
		filepath.Join(d, "..", "lib", "homering", "gpu", v),
	}
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

// checkStamp refuses a directory whose libraries were not built from this
// binary's ggml (build/gpu-lib.sh's stamp names the ollama module version).
func checkStamp(dir string) error {
	want := "github.com/ollama/ollama " + GGMLVersion
	b, err := os.ReadFile(filepath.Join(dir, StampFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the GPU libraries in %s were not built by build/gpu-lib.sh (no %s), so they may come from other ggml headers than this Homering's (%s); build them with build/gpu-lib.sh", dir, StampFile, want)
	case err != nil:
		return fmt.Errorf("the GPU libraries in %s cannot be checked: %w", dir, err)
	}
	if got := strings.TrimSpace(string(b)); got != want {
		return fmt.Errorf("the GPU libraries in %s were built from %s, this Homering needs %s; build them again with build/gpu-lib.sh", dir, got, want)
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
}

// FindGPUDir picks the directory to load GPU backends from, "" for none,
// and says why. Off wins (HOMERING_GPU=off, then the setting); then the
// directory named on the command line, HOMERING_GPU_DIR, and the first of
// GPUDirs that exists.
func FindGPUDir(o GPUOptions) (dir, why string) {
	getenv, isDir := o.Getenv, o.IsDir
	if getenv == nil {
		getenv = os.Getenv
	}
	if isDir == nil {
		isDir = func(p string) bool { fi, err := os.Stat(p); return err == nil && fi.IsDir() }
	}
	switch v := strings.TrimSpace(getenv(EnvGPU)); {
	case strings.EqualFold(v, "off"):
		return "", EnvGPU + "=off"
	case o.Off:
		return "", "the gpu setting is off"
	case o.Dir != "":
		return o.Dir, "named on the command line"
	case getenv(EnvGPUDir) != "":
		return getenv(EnvGPUDir), "named by " + EnvGPUDir
	}
	exe := o.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return "", fmt.Sprintf("this program's path is unknown (%v), so no GPU library beside it", err)
		}
	}
	dirs := GPUDirs(exe)
	for _, d := range dirs {
		if isDir(d) {
			return d, "beside this program"
		}
	}
	return "", fmt.Sprintf("no GPU library is installed (looked in %s; %s names another directory)", strings.Join(dirs, " and "), EnvGPUDir)
}

// LoadGPU loads the GPU backend libraries FindGPUDir picks into this
// process. Call it once, before any model is opened: ggml's backend
// registry is global and never unloads. The runner child calls it at start
// (the agent passes its gpu setting down as HOMERING_GPU=off), `homering
// run` and `homering profile` before they open a model.
func LoadGPU(o GPUOptions, log *slog.Logger) GPULoad {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir, why := FindGPUDir(o)
	if dir == "" {
		// Metal is compiled in on Apple silicon: a GPU without a library.
		log.Debug("no GPU backend loaded", "why", why)
		return GPULoad{GPUs: ggml.GPUCount(), Devices: gpuNames(), Why: why}
	}
	if err := checkStamp(dir); err != nil {
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
