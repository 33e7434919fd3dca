package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"homering/engine/ggml"
)

// Where GPU backends load from: off wins, then the command line, the
// environment, and the versioned directories beside the executable.
func TestFindGPUDir(t *testing.T) {
	exe := filepath.Join("/opt", "homering", "homering")
	beside := filepath.Join("/opt", "homering", "lib", "homering-gpu", "ollama-"+GGMLVersion)
	deb := filepath.Join("/opt", "lib", "homering", "gpu", "ollama-"+GGMLVersion)
	tests := []struct {
		name    string
		env     map[string]string
		off     bool
		flag    string
		exists  []string
		wantDir string
		wantWhy string
	}{
		{"nothing installed", nil, false, "", nil, "", "no GPU library is installed (looked in " + beside + " and " + deb + "; HOMERING_GPU_DIR names another directory)"},
		{"beside the executable", nil, false, "", []string{beside, deb}, beside, "beside this program"},
		{"the .deb's place", nil, false, "", []string{deb}, deb, "beside this program"},
		{"environment", map[string]string{"HOMERING_GPU_DIR": "/gpu"}, false, "", []string{beside}, "/gpu", "named by HOMERING_GPU_DIR"},
		{"command line over environment", map[string]string{"HOMERING_GPU_DIR": "/gpu"}, false, "/flag", nil, "/flag", "named on the command line"},
		{"setting off", map[string]string{"HOMERING_GPU_DIR": "/gpu"}, true, "/flag", []string{beside}, "", "the gpu setting is off"},
		{"HOMERING_GPU=off over everything", map[string]string{"HOMERING_GPU": "OFF", "HOMERING_GPU_DIR": "/gpu"}, false, "/flag", []string{beside}, "", "HOMERING_GPU=off"},
		{"HOMERING_GPU=on is no override", map[string]string{"HOMERING_GPU": "on"}, true, "", []string{beside}, "", "the gpu setting is off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := GPUOptions{Off: tt.off, Dir: tt.flag, Exe: exe,
				Getenv: func(k string) string { return tt.env[k] },
				IsDir: func(p string) bool {
					for _, e := range tt.exists {
						if filepath.Clean(p) == e {
							return true
						}
					}
					return false
				}}
			dir, why := FindGPUDir(o)
			if filepath.Clean(dir) != filepath.Clean(tt.wantDir) || why != tt.wantWhy {
				t.Errorf("FindGPUDir = %q, %q\nwant %q, %q", dir, why, tt.wantDir, tt.wantWhy)
			}
		})
	}
}

// GGMLVersion names the library directories: it must be the version of the
// ollama module the binary's ggml comes from.
func TestGGMLVersionIsGoMod(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/ollama/ollama (v\S+)`).FindSubmatch(b)
	if m == nil || string(m[1]) != GGMLVersion {
		t.Errorf("go.mod pins github.com/ollama/ollama %s, GGMLVersion is %s", m, GGMLVersion)
	}
}

// LoadGPU refuses a directory whose libraries gpu-lib.sh did not build
// from this binary's ggml, before loading anything from it.
func TestLoadGPURefusesForeignLibraries(t *testing.T) {
	dir := t.TempDir()
	// Not a library at all: loading it would fail loudly, refusing it
	// must not try.
	if err := os.WriteFile(filepath.Join(dir, "libggml-vulkan.so"), []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := LoadGPU(GPUOptions{Dir: dir}, nil)
	if got.GPUs != 0 || got.Dir != "" || !strings.Contains(got.Why, "not built by build/gpu-lib.sh") {
		t.Errorf("unstamped directory: %+v", got)
	}
	if err := os.WriteFile(filepath.Join(dir, StampFile), []byte("github.com/ollama/ollama v0.1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got = LoadGPU(GPUOptions{Dir: dir}, nil)
	if got.GPUs != 0 || !strings.Contains(got.Why, "built from github.com/ollama/ollama v0.1.0, this Homering needs github.com/ollama/ollama "+GGMLVersion) {
		t.Errorf("another version's directory: %+v", got)
	}
}

// The CPU variant's choice, where it refuses: every case here ends before
// a library is made this process's backend (loadCPU, not the once-only
// LoadCPU), so the test binary keeps its built-in backend. The variants are
// real libraries that say what ggml's would on a CPU that runs one of them
// and lacks the other's instructions: ggml_backend_score 1 and 0.
func TestLoadCPURefusals(t *testing.T) {
	variant := func(dir, name string, score int) {
		t.Helper()
		src := filepath.Join(t.TempDir(), name+".c")
		code := fmt.Sprintf("int ggml_backend_score(void) { return %d; }\n", score)
		if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", filepath.Join(dir, CPUVariantFile(name)), src).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, out)
		}
		stamp := "github.com/ollama/ollama " + GGMLVersion + "\n"
		if err := os.WriteFile(filepath.Join(dir, StampFile), []byte(stamp), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	future, both := t.TempDir(), t.TempDir()
	variant(future, "future", 0)
	variant(both, "future", 0)
	variant(both, "past", 1)
	unstamped := t.TempDir()
	exe := filepath.Join(t.TempDir(), "homering")
	tests := []struct {
		name, force, dir string
		want             string // in Err; "" none
	}{
		{"forced, none installed", "haswell", "", "HOMERING_CPU=haswell asks for a CPU variant library, but no CPU library is installed (looked in " + CPUDirs(exe)[0]},
		{"forced, not in the directory", "nosuch", both, "HOMERING_CPU=nosuch names no CPU variant in " + both + " (it holds future, past)"},
		{"forced, this CPU cannot run it", "future", both, "HOMERING_CPU=future is refused: this CPU lacks instructions the future variant is built for (it can run past, built-in)"},
		{"forced, unstamped directory", "x64", unstamped, "HOMERING_CPU=x64: the CPU libraries in " + unstamped + " were not built by build/gpu-lib.sh"},
		{"built-in forced over a directory", "built-in", both, ""},
		{"nothing installed", "", "", ""},
		{"none this CPU runs", "", future, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{EnvCPU: tt.force, EnvCPUDir: tt.dir}
			got := loadCPU(CPUOptions{Exe: exe, Getenv: func(k string) string { return env[k] }})
			switch {
			case tt.want != "" && (got.Err == nil || !strings.Contains(got.Err.Error(), tt.want)):
				t.Errorf("loadCPU = %+v\nwant the refusal %q", got, tt.want)
			case tt.want == "" && (got.Err != nil || got.Variant != ggml.BuiltinCPU || got.Path != ""):
				t.Errorf("loadCPU = %+v, want the built-in backend and no refusal", got)
			}
		})
	}
}
