package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runGenModel(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runCmd(t, append([]string{"gen-model"}, args...)...)
}

func TestGenModelWritesAndKeeps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	args := []string{"--arch", "qwen2", "--layers", "1", "--embd", "256", "--ff", "512", "--heads", "4", "--kv-heads", "2", "--vocab", "400", "--type", "Q8_0", "-o", path}
	code, out, errs := runGenModel(t, args...)
	if code != 0 || !strings.HasPrefix(out, "wrote "+path) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ = runGenModel(t, append([]string{"--keep"}, args...)...)
	if code != 0 || !strings.HasPrefix(out, "kept "+path) {
		t.Errorf("--keep on a complete file: exit %d, stdout %q", code, out)
	}
	// A cut file is regenerated.
	if err := os.Truncate(path, st.Size()-1); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runGenModel(t, append([]string{"--keep"}, args...)...)
	if code != 0 || !strings.HasPrefix(out, "wrote "+path) {
		t.Errorf("--keep on a cut file: exit %d, stdout %q", code, out)
	}
	if st2, err := os.Stat(path); err != nil || st2.Size() != st.Size() {
		t.Errorf("regenerated file: %v, %v bytes, want %d", err, st2, st.Size())
	}
	// Another seed: same size, different file, so it is regenerated too.
	code, out, _ = runGenModel(t, append([]string{"--keep", "--seed", "9"}, args...)...)
	if code != 0 || !strings.HasPrefix(out, "wrote "+path) {
		t.Errorf("--keep with another seed: exit %d, stdout %q", code, out)
	}
}

func TestGenModelRejects(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.gguf")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no output", []string{"--arch", "llama"}, 2, "give the output file with -o FILE"},
		{"bad arch", []string{"--arch", "gpt2", "-o", out}, 1, `architecture "gpt2" is not one of llama, mistral, qwen2, qwen3`},
		{"bad type", []string{"--type", "Q4_1", "-o", out}, 1, `type "Q4_1" is not one of F32, F16, BF16, Q8_0, Q6_K, Q5_K, Q4_K, Q3_K, Q2_K, Q5_0, Q4_0, IQ4_XS, IQ4_NL, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ1_S, MXFP4, Q4_K_M, MXFP4_MOE`},
		{"k-quant rows", []string{"--type", "Q4_K", "--ff", "300", "-o", out}, 1, "needs a multiple of 256"},
		{"unwritable", []string{"-o", filepath.Join(out, "sub", "m.gguf")}, 1, "homering gen-model: modelgen:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runGenModel(t, tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 && tt.code == 1 {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errs, tt.code, tt.want)
			}
		})
	}
}
