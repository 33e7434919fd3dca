package agent

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/engine/runner"
	"homering/internal/testlog"
	"homering/internal/testwait"
)

// The gpu setting reaches the children the agent starts (its engine and its
// background measurement) as HOMERING_GPU=off: they load no GPU backend.
func TestGPUSettingReachesChildren(t *testing.T) {
	dir := t.TempDir()
	b := &Agent{dir: dir, log: slog.New(slog.DiscardHandler)}
	for _, gpu := range []string{"", config.GPUOn, config.GPUOff} {
		if err := config.SaveSettings(dir, config.Settings{ContextTokens: 512, GPU: gpu}); err != nil {
			t.Fatal(err)
		}
		cmd := b.gpuSetting(exec.Command("homering", "runner"))
		if off := slices.Contains(cmd.Env, "HOMERING_GPU=off"); off != (gpu == config.GPUOff) {
			t.Errorf("gpu=%q: the child's environment says HOMERING_GPU=off: %v", gpu, off)
		}
	}
}

// Turning the GPU off (or on) restarts the engine child, which reads the
// setting as it starts (GPU backends load once per process): the next chat
// runs on a new child whose environment says HOMERING_GPU=off. A change
// that does not touch the GPU keeps the child.
func TestGPUSettingRestartsEngine(t *testing.T) {
	home := t.TempDir()
	t.Setenv(config.EnvHome, home)
	log := slog.New(slog.NewTextHandler(testlog.Writer(t), nil))
	model, err := filepath.Abs(profileModel)
	if err != nil {
		t.Fatal(err)
	}
	b := &Agent{dir: home, override: model, threads: 1, log: log, running: map[*chatRun]struct{}{}, work: NewWork()}
	b.sup = runner.New(runner.Options{Command: func() *exec.Cmd { return b.gpuSetting(testChild("runner")) }, Log: log})
	t.Cleanup(func() { b.Close() })
	set := func(gpu string) apitype.Settings {
		if err := config.SaveSettings(home, config.Settings{ContextTokens: 512, GPU: gpu}); err != nil {
			t.Fatal(err)
		}
		return apitype.Settings{ContextTokens: 512, GPU: gpu}
	}
	chat := func() (pid int, off bool) {
		t.Helper()
		st, err := b.Chat(context.Background(), apitype.ChatRequest{Prompt: "Once upon a time", MaxTokens: 4}, func(string) error { return nil })
		if err != nil || st.CompletionTokens == 0 {
			t.Fatalf("chat: %+v, %v", st, err)
		}
		pid = b.sup.PID()
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			t.Fatalf("the engine child's environment: %v", err)
		}
		return pid, slices.Contains(strings.Split(string(env), "\x00"), "HOMERING_GPU=off")
	}

	on := set("")
	p1, off := chat()
	if off {
		t.Fatal("the engine child started with the GPU on has HOMERING_GPU=off")
	}
	offSet := set(config.GPUOff)
	b.SettingsChanged(on, offSet)
	testwait.True(t, 30*time.Second, "the engine child ended after the gpu setting changed", func() bool {
		return b.sup.PID() != p1
	})
	p2, off := chat()
	if p2 == p1 || !off {
		t.Fatalf("after turning the GPU off the chat ran on child %d (was %d), HOMERING_GPU=off: %v; want a new child with it", p2, p1, off)
	}

	// A change that leaves the GPU as it was keeps the child.
	again := offSet
	again.ContextTokens = 1024
	b.SettingsChanged(offSet, again)
	if p3, _ := chat(); p3 != p2 {
		t.Errorf("a context change restarted the engine child (%d → %d)", p2, p3)
	}
}
