//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"homering/engine/profile/sysinfo"
)

// cgroup reads one device's memory cgroup (v1 or v2).
type cgroup struct {
	name, dir string
	v2        bool
	limit     int64

	base, peak   int64 // non-reclaimable bytes before the case, and the most since
	peakParts    map[string]int64
	peakUsage    int64
	oomAtStart   int64
	oomNow       int64
	sampleErrors int
}

func openCgroup(name, dir string) (*cgroup, error) {
	cg, err := sysinfo.ReadCgroupDir(dir)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", name, err)
	}
	return &cgroup{name: name, dir: dir, v2: cg.Version == 2, limit: cg.Limit}, nil
}

func (c *cgroup) pick(v1, v2 string) string {
	if c.v2 {
		return filepath.Join(c.dir, v2)
	}
	return filepath.Join(c.dir, v1)
}

// readKeyed reads "key value" lines (memory.stat, memory.oom_control, memory.events).
func readKeyed(path string) map[string]int64 {
	m := map[string]int64{}
	b, err := os.ReadFile(path)
	if err != nil {
		return m
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			m[k] = n
		}
	}
	return m
}

// now returns usage and non-reclaimable bytes (usage minus file pages,
// read by the profiler's own reader, engine/profile/sysinfo) and the
// memory.stat that parts breaks down.
func (c *cgroup) now() (usage, nonReclaimable int64, st map[string]int64, err error) {
	cg, err := sysinfo.ReadCgroupDir(c.dir)
	if err != nil {
		return 0, 0, nil, err
	}
	return cg.Usage, cg.Usage - cg.File, readKeyed(c.pick("memory.stat", "memory.stat")), nil
}

// parts says what non-reclaimable memory is made of: the cgroup's
// anonymous, shared-memory and kernel memory, and each process's resident
// anonymous memory (RssAnon) by command line.
func (c *cgroup) parts(st map[string]int64) map[string]int64 {
	p := map[string]int64{}
	if c.v2 {
		p["anon"], p["shmem"], p["sock"] = st["anon"], st["shmem"], st["sock"]
		if k, ok := st["kernel"]; ok {
			p["kernel"] = k
		} else {
			p["kernel"] = st["kernel_stack"] + st["pagetables"] + st["slab"] + st["percpu"]
		}
	} else {
		p["anon"], p["shmem"] = st["total_rss"], st["total_shmem"]
		if b, err := os.ReadFile(filepath.Join(c.dir, "memory.kmem.usage_in_bytes")); err == nil {
			if k, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				p["kernel"] = k
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return p
	}
	for _, f := range strings.Fields(string(b)) {
		status, err := os.ReadFile(filepath.Join("/proc", f, "status"))
		if err != nil {
			continue
		}
		name := processName(f)
		for _, l := range strings.Split(string(status), "\n") {
			if k := strings.Fields(l); len(k) >= 2 && k[0] == "RssAnon:" {
				n, _ := strconv.ParseInt(k[1], 10, 64)
				p["process "+name] += n * 1024
			}
		}
	}
	return p
}

// processName is a process's program name and first argument ("homering
// runner").
func processName(pid string) string {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
	if err != nil || len(b) == 0 {
		return pid
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	name := filepath.Base(args[0])
	if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
		name += " " + args[1]
	}
	return name
}

func (c *cgroup) ooms() int64 {
	if c.v2 {
		return readKeyed(filepath.Join(c.dir, "memory.events"))["oom_kill"]
	}
	return readKeyed(filepath.Join(c.dir, "memory.oom_control"))["oom_kill"]
}

func (c *cgroup) begin() error {
	_, nr, _, err := c.now()
	if err != nil {
		return fmt.Errorf("device %s: %w", c.name, err)
	}
	c.base, c.peak, c.peakUsage, c.peakParts = nr, nr, 0, nil
	c.oomAtStart = c.ooms()
	c.oomNow = c.oomAtStart
	return nil
}

func (c *cgroup) sample() {
	u, nr, st, err := c.now()
	if err != nil {
		c.sampleErrors++
		return
	}
	if nr > c.peak || c.peakParts == nil {
		c.peakParts = c.parts(st)
	}
	c.peak = max(c.peak, nr)
	c.peakUsage = max(c.peakUsage, u)
	c.oomNow = c.ooms()
}

func (c *cgroup) result() DevMem {
	return DevMem{
		Name:               c.name,
		Pressure:           float64(max(c.peak-c.base, 0)) / float64(c.limit),
		Usage:              float64(c.peakUsage) / float64(c.limit),
		OOMKills:           c.oomNow - c.oomAtStart,
		CapBytes:           c.limit,
		PeakNonReclaimable: c.peak,
		PeakParts:          c.peakParts,
	}
}
