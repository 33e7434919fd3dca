package testgpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"homering/engine/ggml"
)

// A directory that was asked for but holds no backend is an error that says
// how to build one, never a skip.
func TestCheck(t *testing.T) {
	empty, withLib := t.TempDir(), t.TempDir()
	for _, name := range []string{"libggml-base.so", "libggml-vulkan.so"} {
		if err := os.WriteFile(filepath.Join(withLib, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(empty, "libggml-base.so"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		dir     string
		wantErr string
	}{
		{"set but empty", "", "is set but empty"},
		{"only the base library", empty, "holds no backend library"},
		{"a backend", withLib, ""},
		{"built in", Builtin, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(DirEnv, tt.dir)
			dir, set, err := Check()
			if !set || dir != tt.dir {
				t.Errorf("Check = %q, set %v; want %q, set", dir, set, tt.dir)
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// Built in passes where a GPU backend is linked in (Metal on darwin/arm64)
// and, on a build without one (every Linux build, where this process has
// loaded no library), fails with the sentence instead of passing with no GPU.
func TestBuiltin(t *testing.T) {
	err := load(Builtin)
	if ggml.GPUCount() > 0 {
		if err != nil {
			t.Fatalf("load(%q) with %d GPUs built in: %v", Builtin, ggml.GPUCount(), err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), "no GPU backend built in") {
		t.Fatalf("load(%q) = %v, want the no-backend sentence", Builtin, err)
	}
}
