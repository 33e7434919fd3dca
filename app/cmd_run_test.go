package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runCmd(t, append([]string{"run"}, args...)...)
}

func TestRunGreedyStreamsAndReportsSpeed(t *testing.T) {
	args := []string{"-m", storiesModel, "-n", "24", "--temp", "0", "--threads", "1", "Once", "upon", "a", "time"}
	code, out, errs := runRun(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if len(strings.Fields(out)) < 5 {
		t.Errorf("stdout %q: want a few words of story", out)
	}
	for _, want := range []string{"prompt 5 tokens", "generated 24 tokens", "tok/s"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr %q lacks %q", errs, want)
		}
	}
	// Flags after the prompt work too, and greedy output is reproducible.
	code, again, errs := runRun(t, "Once", "upon", "a", "time", "-m", storiesModel, "-n", "24", "--temp", "0", "--threads", "1")
	if code != 0 || again != out {
		t.Errorf("second greedy run: exit %d, stdout %q, want %q (%s)", code, again, out, errs)
	}
}

func TestRunSeedAndChat(t *testing.T) {
	args := []string{"-m", storiesModel, "-n", "16", "--seed", "5", "--temp", "1", "--top-k", "0", "--top-p", "1", "--min-p", "0", "--repeat-penalty", "1.1", "--ctx", "256", "--chat", "Tell me a story."}
	code, a, errs := runRun(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "seed 5") {
		t.Errorf("stderr %q does not name the seed", errs)
	}
	if _, b, _ := runRun(t, args...); a != b {
		t.Errorf("same seed, different text: %q vs %q", a, b)
	}
}

func TestRunBadInput(t *testing.T) {
	dir := t.TempDir()
	notGGUF := filepath.Join(dir, "notes.gguf")
	if err := os.WriteFile(notGGUF, []byte("these are not weights\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(storiesModel)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "cut.gguf")
	if err := os.WriteFile(truncated, whole[:len(whole)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string // in the one line on stderr
	}{
		{"missing file", []string{"-m", filepath.Join(dir, "nope.gguf"), "hi"}, 1, "does not exist"},
		{"directory", []string{"-m", dir, "hi"}, 1, "is a directory"},
		{"not a GGUF", []string{"-m", notGGUF, "hi"}, 1, "is not a GGUF model"},
		{"truncated GGUF", []string{"-m", truncated, "hi"}, 1, "is incomplete"},
		{"no model", []string{"hi"}, 2, "give a model"},
		{"no prompt", []string{"-m", storiesModel}, 2, "give a prompt"},
		{"bad temperature", []string{"-m", storiesModel, "--temp", "-1", "hi"}, 2, "temperature -1"},
		{"bad threads", []string{"-m", storiesModel, "--threads", "0", "hi"}, 2, "--threads"},
		{"prompt longer than the context", []string{"-m", storiesModel, "--ctx", "8", strings.Repeat("story ", 20)}, 1, "does not fit in the context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runRun(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, errs)
			}
			var last string
			for _, l := range strings.Split(strings.TrimSpace(errs), "\n") {
				if strings.HasPrefix(l, "homering run: ") {
					last = l
				}
			}
			if !strings.Contains(last, tt.want) {
				t.Errorf("stderr %q: want a line with %q", errs, tt.want)
			}
			if tt.code == 1 && strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("stderr has more than one line: %q", errs)
			}
			if strings.TrimSpace(out) != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
		})
	}
}
