package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroup reads one device's memory cgroup (v1 or v2).
type cgroup struct {
	name, dir string
	v2        bool
	limit     int64

	base, peak   int64 // non-reclaimable bytes before the case, and the most since
	peakUsage    int64
	oomAtStart   int64
	oomNow       int64
	sampleErrors int
}

func openCgroup(name, dir string) (*cgroup, error) {
	c := &cgroup{name: name, dir: dir}
	if _, err := os.Stat(filepath.Join(dir, "memory.max")); err == nil {
		c.v2 = true
	}
	lim, err := c.readInt(c.pick("memory.limit_in_bytes", "memory.max"))
	if err != nil {
		return nil, fmt.Errorf("device %s: read the memory limit of cgroup %s: %w", name, dir, err)
	}
	c.limit = lim
	return c, nil
}

func (c *cgroup) pick(v1, v2 string) string {
	if c.v2 {
		return filepath.Join(c.dir, v2)
	}
	return filepath.Join(c.dir, v1)
}

func (c *cgroup) readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 1 << 62, nil
	}
	return strconv.ParseInt(s, 10, 64)
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

// now returns usage and non-reclaimable bytes (usage minus file pages, as
// engine/profile/sysinfo counts a cgroup's available memory).
func (c *cgroup) now() (usage, nonReclaimable int64, err error) {
	usage, err = c.readInt(c.pick("memory.usage_in_bytes", "memory.current"))
	if err != nil {
		return 0, 0, err
	}
	st := readKeyed(c.pick("memory.stat", "memory.stat"))
	var file int64
	if c.v2 {
		file = st["active_file"] + st["inactive_file"]
	} else {
		file = st["total_active_file"] + st["total_inactive_file"]
	}
	return usage, max(usage-file, 0), nil
}

func (c *cgroup) ooms() int64 {
	if c.v2 {
		return readKeyed(filepath.Join(c.dir, "memory.events"))["oom_kill"]
	}
	return readKeyed(filepath.Join(c.dir, "memory.oom_control"))["oom_kill"]
}

func (c *cgroup) begin() error {
	_, nr, err := c.now()
	if err != nil {
		return fmt.Errorf("device %s: %w", c.name, err)
	}
	c.base, c.peak, c.peakUsage = nr, nr, 0
	c.oomAtStart = c.ooms()
	c.oomNow = c.oomAtStart
	return nil
}

func (c *cgroup) sample() {
	u, nr, err := c.now()
	if err != nil {
		c.sampleErrors++
		return
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
	}
}
