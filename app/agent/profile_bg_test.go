package agent

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/engine/profile"
	"homering/engine/runner"
	"homering/internal/testdir"
	"homering/internal/testlog"
	"homering/internal/testwait"
)

// profileModel is small: the agent's tests measure and chat with it.
const profileModel = "../../testdata/models/llama-Q4_K.gguf"

// testChild is `homering ARGS` run by this test binary (TestHelperChild
// in child_test.go): the agent's `homering runner` and `homering profile`
// children.
func testChild(args ...string) *exec.Cmd {
	b, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperChild$")
	cmd.Env = append(os.Environ(), "HOMERING_TEST_CHILD="+string(b))
	return cmd
}

func profileTask(w *Work) (apitype.Task, bool) {
	for _, t := range w.List(time.Now()) {
		if t.Kind == profileTaskID {
			return t, true
		}
	}
	return apitype.Task{}, false
}

// TestAgentProfilesInBackground: with no cached profile the agent measures
// this device in a child process, showing its steps as a progress bar; a
// chat started meanwhile stops the measurement and answers on the engine
// child without waiting for it; when idle again the measurement runs to
// its end and lands in the cache the planner reads.
func TestAgentProfilesInBackground(t *testing.T) {
	home := t.TempDir()
	t.Setenv(config.EnvHome, home) // the children's config directory
	log := slog.New(slog.NewTextHandler(testlog.Writer(t), nil))
	model, err := filepath.Abs(profileModel)
	if err != nil {
		t.Fatal(err)
	}
	b := &Agent{sup: runner.New(runner.Options{Command: func() *exec.Cmd { return testChild("runner") }, Log: log}),
		dir: home, override: model, threads: 1, log: log, running: map[*chatRun]struct{}{}, work: NewWork()}
	t.Cleanup(func() { b.Close() })
	b.prof = newBgProfile(home, 1, func() string { return model }, b.work, log)
	b.prof.command, b.prof.quiet = testChild, 0
	// Matmul steps of 2 × 100 ms leave the test seconds to catch the bar
	// mid-way on a busy machine; a small page-fault sweep keeps it short.
	b.prof.extra = []string{"--matmul-ms", "100", "--fault-mib", "24"}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		b.prof.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-ran
	})

	// The bar appears and counts steps.
	seen := map[int64]bool{}
	var first apitype.Task
	testwait.True(t, time.Minute, "profiling bar past its first step and short of its last three", func() bool {
		task, ok := profileTask(b.work)
		if ok && task.Total > 0 {
			seen[task.Done] = true
			first = task
		}
		return ok && task.Done >= 1 && task.Done <= task.Total-3
	})
	if first.Unit != "steps" || first.Done >= first.Total || first.Title == "" || first.Detail == "" {
		t.Fatalf("profiling task = %+v; want a titled step count short of its total", first)
	}

	// A chat now stops the measurement and does not wait for it.
	chatStart := time.Now()
	var barDuringChat bool
	st, err := b.Chat(context.Background(), apitype.ChatRequest{Prompt: "Once upon a time", MaxTokens: 8},
		func(string) error {
			_, shown := profileTask(b.work)
			barDuringChat = barDuringChat || shown
			return nil
		})
	if err != nil {
		t.Fatalf("chat during profiling: %v", err)
	}
	if st.CompletionTokens == 0 {
		t.Errorf("chat during profiling generated nothing: %+v", st)
	}
	if barDuringChat {
		t.Error("the profiling bar showed while the chat generated: the measurement was not stopped")
	}
	if n := b.prof.Stopped(); n < 1 {
		t.Errorf("measurements stopped by the chat = %d, want ≥ 1", n)
	}
	if _, ok, _ := profile.LoadCached(home); ok {
		t.Error("a profile was cached before the chat ended: the chat waited for the measurement")
	}

	// Idle again: it measures from the start, to its end, into the cache.
	var p profile.Profile
	testwait.True(t, 3*time.Minute, "cached profile", func() bool {
		if task, ok := profileTask(b.work); ok {
			seen[task.Done] = true
		}
		var ok bool
		p, ok, _ = profile.LoadCached(home)
		return ok
	})
	testwait.True(t, 10*time.Second, "end of the profiling bar", func() bool {
		_, ok := profileTask(b.work)
		return !ok
	})
	if len(seen) < 3 {
		t.Errorf("the bar showed steps %v; want it to progress through at least 3", seen)
	}
	began := p.MeasuredAt.Add(-time.Duration(p.TookSec * float64(time.Second)))
	if !began.After(chatStart) {
		t.Errorf("the cached measurement began at %v, before the chat (%v): it should be the one resumed after it", began, chatStart)
	}
	types, err := profile.ModelTypes(model)
	if err != nil {
		t.Fatal(err)
	}
	cache := profile.NewCache(filepath.Join(home, profile.CacheDirName), log)
	entries, err := cache.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if why := profile.Due(entries, time.Now(), profile.DefaultMaxAge, 1, types); why != "" {
		t.Errorf("after the background measurement a measurement is still due: %s", why)
	}
	if _, why := b.prof.due(); why != "" {
		t.Errorf("the agent still finds a measurement due: %s", why)
	}
}

func TestProfileQuietFromEnv(t *testing.T) {
	tests := []struct {
		name, value string
		want        time.Duration
		off, ok     bool
	}{
		{name: "unset"},
		{name: "a duration", value: "30s", want: 30 * time.Second, ok: true},
		{name: "zero: at once", value: "0s", ok: true},
		{name: "off", value: "off", off: true, ok: true},
		{name: "garbage keeps the default", value: "soon"},
		{name: "negative keeps the default", value: "-1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, off, ok := profileQuietFromEnv(func(string) string { return tt.value })
			got := []any{d, off, ok}
			if diff := cmp.Diff([]any{tt.want, tt.off, tt.ok}, got); diff != "" {
				t.Errorf("profileQuietFromEnv(%q) (-want +got):\n%s", tt.value, diff)
			}
		})
	}
}

// TestProfileStopRemovesScratch: a background measurement stopped while its
// disk step runs (its scratch file exists) ends and leaves no scratch file
// and no profile: the stop is the child's own, graceful one (its stdin
// closed), not a kill (which leaves the file), and not ignored (the
// measurement would end and cache its profile). The kill waits a minute
// here, not profileStopWait: the disk step's writes and reads take longer
// on a loaded machine. With no model the scratch files go to the
// child's temporary directory.
func TestProfileStopRemovesScratch(t *testing.T) {
	home, tmp := testdir.Scratch(t), testdir.Scratch(t)
	t.Setenv(config.EnvHome, home)
	for _, v := range []string{"TMPDIR", "TMP", "TEMP"} { // os.TempDir's, per OS
		t.Setenv(v, tmp)
	}
	log := slog.New(slog.NewTextHandler(testlog.Writer(t), nil))
	p := newBgProfile(home, 1, func() string { return "" }, nil, log)
	p.command, p.quiet, p.stopWait = testChild, 0, time.Minute
	p.extra = []string{"--matmul-ms", "10", "--fault-mib", "24"}
	ended := make(chan error, 1)
	go func() { ended <- p.measure(context.Background(), "", "test") }()
	testwait.True(t, 2*time.Minute, "a scratch file of the measurement", func() bool {
		names, _ := os.ReadDir(tmp)
		return len(names) > 0
	})
	stopped := time.Now()
	p.Touch()
	var err error
	select {
	case err = <-ended:
	case <-time.After(2 * time.Minute):
		t.Fatal("the stopped measurement did not end in two minutes")
	}
	if took := time.Since(stopped); !errors.Is(err, errProfileDeferred) || took >= p.stopWait {
		t.Fatalf("stopped measurement: %v after %v; want errProfileDeferred in under %v (else it was killed)", err, took, p.stopWait)
	}
	if names, _ := os.ReadDir(tmp); len(names) > 0 {
		t.Errorf("the stopped measurement left %v in its temporary directory", names)
	}
	if _, ok, _ := profile.LoadCached(home); ok {
		t.Error("a stopped measurement cached a profile")
	}
}
