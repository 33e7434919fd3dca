package testgpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
