package testcgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Cgroup is a memory cgroup with a limit.
type Cgroup struct {
	// Dir is its directory under /sys/fs/cgroup.
	Dir string
}

// New makes memory cgroup name limited to limit bytes.
func New(name string, limit int64) (*Cgroup, error) {
	var dir, limitFile string
	switch {
	case exists("/sys/fs/cgroup/memory/cgroup.procs"):
		// v1: a child of this process's own memory cgroup.
		own := "/"
		b, err := os.ReadFile("/proc/self/cgroup")
		if err != nil {
			return nil, err
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.SplitN(l, ":", 3); len(f) == 3 && hasWord(f[1], "memory") {
				own = f[2]
			}
		}
		dir, limitFile = filepath.Join("/sys/fs/cgroup/memory", own, name), "memory.limit_in_bytes"
	case exists("/sys/fs/cgroup/cgroup.controllers"):
		dir, limitFile = filepath.Join("/sys/fs/cgroup", name), "memory.max"
		sub, err := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control")
		if err != nil {
			return nil, err
		}
		if !hasWord(string(sub), "memory") {
			if err := os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+memory"), 0o644); err != nil {
				return nil, fmt.Errorf("enable cgroup v2's memory controller (tests run as root): %w", err)
			}
		}
	default:
		return nil, fmt.Errorf("no memory cgroup controller (neither /sys/fs/cgroup/memory nor cgroup2)")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make a memory cgroup (tests run as root): %w", err)
	}
	c := &Cgroup{Dir: dir}
	if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		c.Remove()
		return nil, fmt.Errorf("set the limit of %s: %w", dir, err)
	}
	return c, nil
}

// Wrap returns a command line that joins the cgroup and then execs argv, so
// the process and all its children are charged from their first page on and
// keep argv's PID.
func (c *Cgroup) Wrap(argv ...string) []string {
	return append([]string{"sh", "-c", `echo $$ >"$0/cgroup.procs" && exec "$@"`, c.Dir}, argv...)
}

// Remove kills what is left in the cgroup and removes it (best effort).
func (c *Cgroup) Remove() {
	for range 100 {
		b, _ := os.ReadFile(filepath.Join(c.Dir, "cgroup.procs"))
		pids := strings.Fields(string(b))
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = os.Remove(c.Dir)
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

func hasWord(list, w string) bool {
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
		if f == w {
			return true
		}
	}
	return false
}
