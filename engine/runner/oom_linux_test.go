package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"homering/engine/profile/sysinfo"
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
		dir := memCgroup(t, 192<<20)
		opt := supervisorOptions(t)
		opt.Command = func() *exec.Cmd {
			c := childCommand()
			w := exec.Command("sh", append([]string{"-c", `echo $$ >"$0/cgroup.procs" && exec "$@"`, dir, c.Path}, c.Args[1:]...)...)
			w.Env = c.Env
			return w
		}
		s := New(opt)
		t.Cleanup(func() { s.Close() })
		// A 1 GB KV cache in a 192 MiB cgroup: the kernel kills the child
		// as it clears the cache.
		_, _, err := collect(context.Background(), s, LoadParams{Model: "../../testdata/models/llama-1g-Q8_0.gguf", NCtx: 32768, Threads: 1}, story())
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

// memCgroup makes a memory cgroup (v1 below this process's own, or v2)
// limited to limit bytes, removed at the end of the test.
func memCgroup(t *testing.T, limit int64) string {
	t.Helper()
	name := fmt.Sprintf("homering-runner-test-%d", os.Getpid())
	var dir, limitFile string
	if _, err := os.Stat("/sys/fs/cgroup/memory/cgroup.procs"); err == nil {
		own := "/"
		b, err := os.ReadFile("/proc/self/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.SplitN(l, ":", 3); len(f) == 3 && strings.Contains(","+f[1]+",", ",memory,") {
				own = f[2]
			}
		}
		dir, limitFile = filepath.Join("/sys/fs/cgroup/memory", own, name), "memory.limit_in_bytes"
	} else {
		dir, limitFile = filepath.Join("/sys/fs/cgroup", name), "memory.max"
		if err := os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+memory"), 0o644); err != nil {
			t.Fatalf("enable cgroup v2's memory controller (the test runs as root): %v", err)
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("make a memory cgroup (the test runs as root): %v", err)
	}
	t.Cleanup(func() {
		for range 100 {
			b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			if len(strings.Fields(string(b))) == 0 {
				break
			}
			for _, p := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(p); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		_ = os.Remove(dir)
	})
	if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
