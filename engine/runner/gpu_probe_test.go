//go:build !windows

// Not built for Windows, like runner_test.go whose child helper these use:
// the probe tests build a crashing shared library with gcc and load Linux
// backends.

package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"homering/internal/testgpu"
)

// A backend library that crashes when loaded takes down the probe child,
// not the process that asked: LoadGPU says so and loads nothing.
func TestLoadGPUProbeSurvivesACrashingDriver(t *testing.T) {
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc builds the crashing library: %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "crash.c")
	code := "__attribute__((constructor)) static void boom(void) { *(volatile int *)0 = 1; }\n"
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", filepath.Join(dir, "libggml-vulkan.so"), src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, StampFile), []byte("github.com/ollama/ollama "+GGMLVersion+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := LoadGPU(GPUOptions{Dir: dir, Probe: true, ProbeCmd: childCommand}, nil)
	t.Logf("%+v", got)
	if got.GPUs != 0 || got.Dir != "" || !strings.Contains(got.Why, "crashed a probe process") {
		t.Errorf("crashing library: %+v", got)
	}
}

// The probe child of a real library (lavapipe's Vulkan, in build/test.sh)
// reports its GPU.
func TestProbeFindsTheGPU(t *testing.T) {
	dir := testgpu.Need(t)
	n, err := probe(dir, GPUOptions{ProbeCmd: func() *exec.Cmd {
		cmd := childCommand()
		cmd.Env = append(cmd.Env, testgpu.Env()...)
		return cmd
	}})
	if err != nil || n < 1 {
		t.Fatalf("probe of %s: %d GPUs, %v", dir, n, err)
	}
}
