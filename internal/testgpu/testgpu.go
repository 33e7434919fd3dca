package testgpu

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"homering/engine/ggml"
)

// DirEnv names the directory holding libggml-<backend>.so and its
// libggml-base.so.
const DirEnv = "HOMERING_GPU_LIB_DIR"

// Builtin, as DirEnv's value, says the GPU backend is linked into the test
// binary instead of loaded from a directory: Metal, which ollama's ggml
// compiles into every darwin/arm64 build (the macOS job of
// .github/workflows/release.yml runs engine/gputest so).
const Builtin = "builtin"

// Check returns the library directory the run asked for. set is false when
// DirEnv is unset; err says why a directory that was asked for is unusable.
func Check() (dir string, set bool, err error) {
	dir, set = os.LookupEnv(DirEnv)
	if !set {
		return "", false, nil
	}
	if dir == "" {
		return "", true, fmt.Errorf("%s is set but empty; build/test.sh sets it to the directory build/gpu-lib.sh vulkan prints", DirEnv)
	}
	if dir == Builtin {
		return dir, true, nil
	}
	if len(Libraries(dir)) == 0 {
		return dir, true, fmt.Errorf("%s=%s holds no backend library (libggml-vulkan.so or libggml-cuda.so); build one with build/gpu-lib.sh vulkan", DirEnv, dir)
	}
	return dir, true, nil
}

// Libraries lists the backend libraries in dir (libggml-base.so, which every
// backend links, is none).
func Libraries(dir string) []string {
	libs, _ := filepath.Glob(filepath.Join(dir, "libggml-*.so"))
	return slices.DeleteFunc(libs, func(p string) bool { return filepath.Base(p) == "libggml-base.so" })
}

// Env is what lavapipe needs, as KEY=VALUE for a child's environment: the
// caller's own values where set, else the defaults (package doc).
func Env() []string {
	defaults := map[string]string{"GGML_VK_VISIBLE_DEVICES": "0"}
	if c, err := os.UserCacheDir(); err == nil {
		defaults["MESA_SHADER_CACHE_DIR"] = filepath.Join(c, "homering", "mesa-shader-cache")
	}
	var out []string
	for _, k := range []string{"GGML_VK_VISIBLE_DEVICES", "MESA_SHADER_CACHE_DIR"} {
		if v, ok := os.LookupEnv(k); ok {
			out = append(out, k+"="+v)
		} else if v, ok := defaults[k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// Need skips tb when the run asked for no GPU and fails it when the run
// asked for one that is unusable; it returns the library directory.
func Need(tb testing.TB) string {
	tb.Helper()
	dir, set, err := Check()
	if !set {
		tb.Skipf("%s is unset: no GPU backend library (build/test.sh sets it from build/gpu-lib.sh vulkan)", DirEnv)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}

var loaded struct {
	once sync.Once
	err  error
}

// Load is Need, then loads the backend into this process once, with Env
// set in it.
func Load(tb testing.TB) {
	tb.Helper()
	dir := Need(tb)
	loaded.once.Do(func() { loaded.err = load(dir) })
	if loaded.err != nil {
		tb.Fatal(loaded.err)
	}
}

func load(dir string) error {
	for _, kv := range Env() {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			return fmt.Errorf("set %s: %w", k, err)
		}
	}
	if dir == Builtin {
		if ggml.GPUCount() == 0 {
			return fmt.Errorf("%s=%s, but this test binary has no GPU backend built in (only darwin/arm64 builds have one, Metal) or its GPU does not appear: on Linux set it to the directory build/gpu-lib.sh vulkan prints", DirEnv, Builtin)
		}
		return nil
	}
	if n := ggml.LoadBackends(dir); n == 0 {
		names := Libraries(dir)
		for i, p := range names {
			names[i] = filepath.Base(p)
		}
		return fmt.Errorf("loaded %s from %s but ggml sees no GPU device: is a driver installed (Debian: mesa-vulkan-drivers, then `vulkaninfo --summary` lists llvmpipe)? "+
			"lavapipe, a CPU-type device, needs GGML_VK_VISIBLE_DEVICES=0 (here %q)",
			strings.Join(names, ", "), dir, os.Getenv("GGML_VK_VISIBLE_DEVICES"))
	}
	return nil
}
