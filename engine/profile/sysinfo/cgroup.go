package sysinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// available is the memory left under the limit: page cache charged to the
// cgroup is reclaimable, so it counts as available (as in MemAvailable).
func (c *Cgroup) available() int64 {
	a := c.Limit - c.Usage + c.File
	return max(0, min(a, c.Limit))
}

// ReadCgroupDir reads the memory cgroup whose directory is dir on this
// machine (a v1 memory controller's or a v2 one's, told apart by v2's
// memory.max): its limit, usage and the page cache charged to it. Tests and
// benchmarks that cap their devices with cgroups read them through it, so
// that what they call non-reclaimable (Usage - File) is what a device in
// such a cgroup counts as unavailable (available).
func ReadCgroupDir(dir string) (*Cgroup, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	version := 1
	if _, err := os.Stat(filepath.Join(abs, "memory.max")); err == nil {
		version = 2
	}
	c := readLimit(os.DirFS("/"), strings.TrimPrefix(filepath.ToSlash(abs), "/"), version)
	if c == nil {
		return nil, fmt.Errorf("%s is not a memory cgroup with a limit (no readable memory.limit_in_bytes or memory.max below %d bytes)", dir, noLimit)
	}
	return c, nil
}

// noLimit: v1 reports "no limit" as a huge page-aligned number.
const noLimit = int64(1) << 60

// readCgroups finds the tightest memory limit over the cgroups (v1 memory
// controller and v2 unified) the process in selfCgroup belongs to, each
// ancestor included. fsys is rooted at "/" (a test passes a fstest.MapFS).
func readCgroups(fsys fs.FS, selfCgroup, mountinfo string) *Cgroup {
	cg, err := fs.ReadFile(fsys, selfCgroup)
	if err != nil {
		return nil
	}
	mounts := cgroupMounts(fsys, mountinfo)
	var best *Cgroup
	consider := func(c *Cgroup) {
		if c != nil && (best == nil || c.available() < best.available()) {
			best = c
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(cg))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			for _, root := range mounts.v2 {
				consider(walkUp(fsys, root, parts[2], 2))
			}
		case hasController(parts[1], "memory"):
			for _, root := range mounts.v1 {
				consider(walkUp(fsys, root, parts[2], 1))
			}
		}
	}
	return best
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

type mountSet struct{ v1, v2 []string }

// cgroupMounts lists the cgroup2 mounts and the v1 mounts with the memory
// controller, as paths relative to fsys. Without mountinfo the usual places
// are assumed.
func cgroupMounts(fsys fs.FS, mountinfo string) mountSet {
	var m mountSet
	b, err := fs.ReadFile(fsys, mountinfo)
	if err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			// id parent maj:min root mountpoint opts [optional...] - fstype source superopts
			l := sc.Text()
			pre, post, ok := strings.Cut(l, " - ")
			if !ok {
				continue
			}
			f, g := strings.Fields(pre), strings.Fields(post)
			if len(f) < 5 || len(g) < 1 {
				continue
			}
			mp := strings.TrimPrefix(f[4], "/")
			switch g[0] {
			case "cgroup2":
				m.v2 = append(m.v2, mp)
			case "cgroup":
				if len(g) >= 3 && hasController(g[2], "memory") {
					m.v1 = append(m.v1, mp)
				}
			}
		}
	}
	if len(m.v1) == 0 && len(m.v2) == 0 {
		m.v1 = []string{"sys/fs/cgroup/memory"}
		m.v2 = []string{"sys/fs/cgroup", "sys/fs/cgroup/unified"}
	}
	return m
}

// walkUp checks the cgroup directory of rel under root and each of its
// ancestors; a container may see its own cgroup at the mount's root, so a
// path that does not exist is retried from the root itself.
func walkUp(fsys fs.FS, root, rel string, version int) *Cgroup {
	var best *Cgroup
	dir := path.Join(root, rel)
	if _, err := fs.Stat(fsys, dir); err != nil {
		dir = root
	}
	for {
		if c := readLimit(fsys, dir, version); c != nil && (best == nil || c.available() < best.available()) {
			best = c
		}
		if dir == root || dir == "." || dir == "" {
			return best
		}
		dir = path.Dir(dir)
	}
}

func readLimit(fsys fs.FS, dir string, version int) *Cgroup {
	limitF, usageF, fileKeys := "memory.limit_in_bytes", "memory.usage_in_bytes", []string{"total_active_file", "total_inactive_file"}
	if version == 2 {
		limitF, usageF, fileKeys = "memory.max", "memory.current", []string{"active_file", "inactive_file"}
	}
	limit, ok := readInt(fsys, path.Join(dir, limitF))
	if !ok || limit <= 0 || limit >= noLimit {
		return nil
	}
	usage, _ := readInt(fsys, path.Join(dir, usageF))
	c := &Cgroup{Version: version, Path: "/" + dir, Limit: limit, Usage: usage}
	if st, err := fs.ReadFile(fsys, path.Join(dir, "memory.stat")); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(st))
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), " ")
			for _, want := range fileKeys {
				if k == want {
					n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
					c.File += n
				}
			}
		}
	}
	c.File = min(c.File, c.Usage)
	return c
}

// readInt reads a one-number file; "max" (v2's no limit) is not a number.
func readInt(fsys fs.FS, name string) (int64, bool) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}
