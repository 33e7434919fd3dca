package sysinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

func readMemory() (Memory, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return Memory{}, fmt.Errorf("sysinfo: read memory: %w", err)
	}
	mi := parseMeminfo(b)
	m := Memory{
		Total:     mi["MemTotal"],
		Available: mi["MemAvailable"],
		SwapTotal: mi["SwapTotal"],
		SwapFree:  mi["SwapFree"],
	}
	if m.Total == 0 {
		return m, fmt.Errorf("sysinfo: /proc/meminfo has no MemTotal")
	}
	if cg := readCgroups(os.DirFS("/"), "proc/self/cgroup", "proc/self/mountinfo"); cg != nil {
		m.Cgroup = cg
		if a := cg.available(); a < m.Available {
			m.Available = a
		}
	}
	return m, nil
}

// parseMeminfo reads "Key:   123 kB" lines into bytes.
func parseMeminfo(b []byte) map[string]int64 {
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			n *= 1024
		}
		out[k] = n
	}
	return out
}
