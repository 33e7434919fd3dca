package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"homering/engine/profile/sysinfo"
	"homering/internal/testcgroup"
)

// A child killed with SIGKILL from outside is not an out-of-memory death;
// one the kernel's OOM killer ends in its memory cgroup is, so the agent
// can tell a person to free memory rather than blame the model file.
func TestSupervisorTellsOOMFromKill(t *testing.T) {
	t.Run("killed from outside", func(t *testing.T) {
		s := newSupervisor(t)
		lp := LoadParams{Model: stories260K, NCtx: 256, Threads: 1}
		// The count is the machine's: an OOM kill elsewhere (another
		// package's test) while this child dies is retried, not blamed.
		for attempt := 1; ; attempt++ {
			if _, _, err := collect(context.Background(), s, lp, story()); err != nil {
				t.Fatal(err)
			}
			pid := s.PID()
			if pid <= 0 {
				t.Fatalf("no engine child after a generation (pid %d)", pid)
			}
			before, _ := sysinfo.OOMKills()
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			died := waitDied(t, s, lp)
			if after, _ := sysinfo.OOMKills(); died.OOM && after > before && attempt < 3 {
				continue
			}
			if died.Signal != "SIGKILL" || died.OOM {
				t.Errorf("DiedError = %+v; want SIGKILL, not OOM", died)
			}
			break
		}
	})
	t.Run("out of memory in its cgroup", func(t *testing.T) {
		cg, err := testcgroup.New(fmt.Sprintf("homering-runner-test-%d", os.Getpid()), 192<<20)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cg.Remove)
		opt := supervisorOptions(t)
		opt.Command = func() *exec.Cmd {
			c := childCommand()
			argv := cg.Wrap(append([]string{c.Path}, c.Args[1:]...)...)
			w := exec.Command(argv[0], argv[1:]...)
			w.Env = c.Env
			return w
		}
		s := New(opt)
		t.Cleanup(func() { s.Close() })
		// A 1 GB KV cache in a 192 MiB cgroup: the kernel kills the child
		// as it clears the cache.
		_, _, err = collect(context.Background(), s, LoadParams{Model: "../../testdata/models/llama-1g-Q8_0.gguf", NCtx: 32768, Threads: 1}, story())
		var died *DiedError
		if !errors.As(err, &died) {
			t.Fatalf("loading into a 192 MiB cgroup: %v, want the engine killed for memory", err)
		}
		if died.Signal != "SIGKILL" || !died.OOM {
			t.Errorf("DiedError = %+v; want SIGKILL for lack of memory", died)
		}
	})
}

// story is a short greedy generation with a prompt.
func story() GenerateParams {
	g := *greedy(2)
	g.Prompt = "Once upon a time"
	return g
}

// waitDied runs requests until one fails because the child is dead.
func waitDied(t *testing.T, s *Supervisor, lp LoadParams) *DiedError {
	t.Helper()
	for range 50 {
		_, _, err := collect(context.Background(), s, lp, story())
		var died *DiedError
		if errors.As(err, &died) {
			return died
		}
		if err != nil {
			t.Fatalf("after SIGKILL: %v, want a DiedError", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no request failed after the child was killed")
	return nil
}
