//go:build linux

package apptest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"homering/engine/profile/sysinfo"
)

// memCgroup is a node's own memory cgroup (v1 or v2), made as bench/rig
// makes its devices' (rig.sh: rig_cgroup_base). A node in one reports the
// memory pressure of its own processes (engine/ring/job: non-reclaimable
// use over the cap); outside one it reports the machine's drop of available
// memory, which any other work on the machine moves.
type memCgroup struct {
	dir string
	v2  bool
}

// newMemCgroup makes cgroup name with a limit of limit bytes.
func newMemCgroup(name string, limit int64) (*memCgroup, error) {
	c := &memCgroup{}
	switch {
	case fileExists("/sys/fs/cgroup/memory/cgroup.procs"):
		// v1: a child of this process's own memory cgroup, as the rig does.
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
		c.dir = filepath.Join("/sys/fs/cgroup/memory", own, name)
	case fileExists("/sys/fs/cgroup/cgroup.controllers"):
		c.v2, c.dir = true, filepath.Join("/sys/fs/cgroup", name)
		sub, err := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control")
		if err != nil {
			return nil, err
		}
		if !hasWord(string(sub), "memory") {
			if err := os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+memory"), 0o644); err != nil {
				return nil, fmt.Errorf("enable the memory controller: %w", err)
			}
		}
	default:
		return nil, fmt.Errorf("no memory cgroup controller (neither /sys/fs/cgroup/memory nor cgroup2)")
	}
	if err := os.Mkdir(c.dir, 0o755); err != nil {
		return nil, err
	}
	lim := []byte(strconv.FormatInt(limit, 10))
	var err error
	if c.v2 {
		err = os.WriteFile(filepath.Join(c.dir, "memory.max"), lim, 0o644)
	} else {
		err = os.WriteFile(filepath.Join(c.dir, "memory.limit_in_bytes"), lim, 0o644)
	}
	if err != nil {
		c.remove()
		return nil, fmt.Errorf("set the limit of %s: %w", c.dir, err)
	}
	return c, nil
}

// wrap returns a command line that joins the cgroup and then execs argv, so
// the process and all its children are charged from their first page on
// and keep argv's PID.
func (c *memCgroup) wrap(argv ...string) []string {
	return append([]string{"sh", "-c", `echo $$ >"$0/cgroup.procs" && exec "$@"`, c.dir}, argv...)
}

// pressure is the cgroup's non-reclaimable memory (usage less file pages,
// which include the mapped weights the kernel may evict) over its limit:
// what engine/ring/job reports for a device in a cgroup, read from outside
// through the profiler's own reader.
func (c *memCgroup) pressure() (float64, error) {
	cg, err := sysinfo.ReadCgroupDir(c.dir)
	if err != nil {
		return 0, err
	}
	return float64(cg.Usage-cg.File) / float64(cg.Limit), nil
}

// remove kills what is left in the cgroup and removes it (best effort).
func (c *memCgroup) remove() {
	for range 50 {
		b, _ := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
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
	_ = os.Remove(c.dir)
}

func fileExists(path string) bool { _, err := os.Stat(path); return err == nil }

func hasWord(list, w string) bool {
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
		if f == w {
			return true
		}
	}
	return false
}
