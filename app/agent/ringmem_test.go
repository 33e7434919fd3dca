package agent

import (
	"context"
	"log/slog"
	"os/exec"
	"path/filepath"
	"testing"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/engine/profile/sysinfo"
	"homering/engine/runner"
	"homering/internal/testlog"
)

// The memory the engine child holds between requests counts as available
// to plans (this device's) and to heads' looks (RingProfile): the OS's
// reading plus the child's anonymous memory, read now.
func TestEngineMemoryCounts(t *testing.T) {
	home := t.TempDir()
	t.Setenv(config.EnvHome, home)
	log := slog.New(slog.NewTextHandler(testlog.Writer(t), nil))
	model, err := filepath.Abs(profileModel)
	if err != nil {
		t.Fatal(err)
	}
	b := &Agent{sup: runner.New(runner.Options{Command: func() *exec.Cmd { return testChild("runner") }, Log: log}),
		dir: home, override: model, threads: 1, log: log, running: map[*chatRun]struct{}{}}
	t.Cleanup(func() { b.Close() })
	if held := b.sup.EngineAnon(); held != 0 {
		t.Fatalf("no engine child yet, but it holds %d bytes", held)
	}
	if _, err := b.Chat(context.Background(), apitype.ChatRequest{Prompt: "Once upon a time", MaxTokens: 4}, func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	held := b.sup.EngineAnon()
	if held < 1<<20 {
		t.Fatalf("the engine child holds %d bytes after a chat, want its anonymous memory", held)
	}
	mem, err := sysinfo.ReadMemory()
	if err != nil {
		t.Fatal(err)
	}
	avail, total := b.plannerMemory()
	d, _ := b.RingProfile()
	// The OS's reading moves a little between the reads: half the credit
	// is the margin.
	for what, got := range map[string]int64{"plannerMemory": avail, "RingProfile": d.RAMAvailable} {
		if got < min(mem.Available+held/2, total) || got > total {
			t.Errorf("%s: %d bytes available; the OS reads %d and the engine holds %d (total %d)", what, got, mem.Available, held, total)
		}
	}
}
