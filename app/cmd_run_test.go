package app

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"homering/app/config"
	"homering/internal/testgpu"
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
		{"bad temperature", []string{"-m", storiesModel, "--temp", "-1", "hi"}, 2, "temperature -1"},
		{"bad threads", []string{"-m", storiesModel, "--threads", "0", "hi"}, 2, "--threads"},
		{"prompt longer than the context", []string{"-m", storiesModel, "--ctx", "8", strings.Repeat("story ", 20)}, 1, "does not fit in the context"},
		{"GPU layers not a number", []string{"-m", storiesModel, "--gpu-layers", "many", "hi"}, 2, `--gpu-layers is auto or 0 to 6 (this model's 5 layers, +1 for the output head), not "many"`},
		{"more GPU layers than the model", []string{"-m", storiesModel, "--gpu-layers", "7", "hi"}, 2, "--gpu-layers is auto or 0 to 6"},
		{"GPU layers without a GPU", []string{"-m", storiesModel, "--gpu-layers", "1", "hi"}, 1, "--gpu-layers 1 needs a GPU, and none is loaded: HOMERING_GPU=off"},
	}
	// No GPU backend may load into this test process (HOMERING_GPU=off wins
	// over every directory), and no settings but the defaults.
	t.Setenv("HOMERING_GPU", "off")
	t.Setenv(config.EnvHome, t.TempDir())
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

// llamaF32 is a generated 4-layer llama in F32 (build/gen-models.sh): F32,
// so that the GPU's kernels agree with the CPU's closely enough for greedy
// decoding to pick the same tokens (engine/gputest states the per-type
// tolerances; quantized types differ slightly more, mostly by the CPU's own
// 8-bit quantization of activations).
const llamaF32 = "../testdata/models/llama-F32.gguf"

// helperMainEnv carries the arguments of TestHelperMain's command.
const helperMainEnv = "HOMERING_APP_TEST_MAIN"

// TestHelperMain is no test: GPU tests run this test binary as `homering
// ARGS` (helperMain) so that the GPU backend loads into a child, never into
// this package's test process, whose other tests must see no GPU.
func TestHelperMain(t *testing.T) {
	v := os.Getenv(helperMainEnv)
	if v == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(v), &args); err != nil {
		os.Exit(3)
	}
	os.Exit(mainWith(args, env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}))
}

// helperMain runs `homering ARGS` in a child with extra environment.
func helperMain(t *testing.T, extraEnv []string, args ...string) (int, string, string) {
	t.Helper()
	return helperMainStdin(t, extraEnv, "", args...)
}

// helperMainStdin is helperMain with stdin.
func helperMainStdin(t *testing.T, extraEnv []string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperMain$")
	cmd.Env = append(append(os.Environ(), helperMainEnv+"="+string(b)), extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errb
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// `homering run --gpu-layers N` on the GPU backend build/test.sh names
// (Vulkan on lavapipe in CI) prints the greedy text the CPU prints: with two
// of the four layers on the GPU, and with all four and the output head
// (N = layers + 1).
func TestRunGPULayers(t *testing.T) {
	dir := testgpu.Need(t)
	args := []string{"-m", llamaF32, "-n", "24", "--temp", "0", "--threads", "2", "--ctx", "64", "Once", "upon", "a", "time"}
	home := []string{config.EnvHome + "=" + t.TempDir()}
	code, cpu, errs := helperMain(t, home, append([]string{"run", "--gpu-layers", "0"}, args...)...)
	if code != 0 || !strings.Contains(errs, "generated 24 tokens") || !strings.Contains(errs, "every layer on the CPU") {
		t.Fatalf("CPU run: exit %d, stderr %q", code, errs)
	}
	t.Logf("CPU: %q", cpu)
	env := append(home, testgpu.Env()...)
	for _, tt := range []struct{ layers, want string }{
		{"2", "2 layers on "},
		{"5", "4 layers and the output head on "},
	} {
		t.Run(tt.layers, func(t *testing.T) {
			code, gpu, errs := helperMain(t, env, append([]string{"run", "--gpu-dir", dir, "--gpu-layers", tt.layers}, args...)...)
			if code != 0 || !strings.Contains(errs, tt.want) {
				t.Fatalf("exit %d, stderr %q; want it to say %q", code, errs, tt.want)
			}
			if gpu != cpu {
				t.Errorf("greedy text with %s GPU layers:\n%q\nthe CPU's:\n%q", tt.layers, gpu, cpu)
			}
		})
	}
}

// `homering run` without a prompt is a chat on stdin, as ollama run is: each
// line a message answered with the conversation so far (the second turn
// reuses the first's KV: cached tokens), /clear forgets it (the same first
// reply again, greedy), a failed turn is said and the chat goes on, /bye
// ends it. No prompt is printed to a pipe.
func TestRunChatOnStdin(t *testing.T) {
	home := []string{config.EnvHome + "=" + t.TempDir()}
	args := []string{"run", "-m", storiesModel, "-n", "12", "--temp", "0", "--ctx", "256"}
	long := strings.Repeat("once upon a time ", 200) // more than the 256-token context
	code, out, errs := helperMainStdin(t, home, "Tell me a story\nAnd then?\n"+long+"\n/clear\nTell me a story\n/bye\nnot read\n", args...)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	replies := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	turns := regexp.MustCompile(`prompt (\d+) tokens \((\d+) cached\)`).FindAllStringSubmatch(errs, -1)
	if len(turns) != 3 || len(replies) < 3 {
		t.Fatalf("want 3 answered turns, got %d stats lines and stdout %q\nstderr %q", len(turns), out, errs)
	}
	num := func(s string) int { n, _ := strconv.Atoi(s); return n }
	if num(turns[1][2]) == 0 || num(turns[1][1]) <= num(turns[0][1]) {
		t.Errorf("the second turn: prompt %s tokens, %s cached; want the first turn's conversation in it and its KV reused", turns[1][1], turns[1][2])
	}
	if !strings.Contains(errs, "the conversation goes on") {
		t.Errorf("the too-long message was not refused with a sentence: %q", errs)
	}
	if turns[2][1] != turns[0][1] || replies[0] == "" || replies[len(replies)-1] != replies[0] {
		t.Errorf("after /clear the same message should give the first reply again:\n first %q\n last  %q\n(prompt tokens %s vs %s)", replies[0], replies[len(replies)-1], turns[0][1], turns[2][1])
	}
	if strings.Contains(errs, ">>> ") || strings.Contains(out, "not read") {
		t.Errorf("a pipe got the terminal's prompt, or a line after /bye was read: stderr %q", errs)
	}
}
