package sysinfo

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// OOMKills is how many processes the kernel's out-of-memory killer has
// killed since boot, over the whole machine and every memory cgroup in it
// (Linux: /proc/vmstat's oom_kill). A supervisor reads it when its child
// starts and when the child dies of SIGKILL: a count that grew in between
// tells "memory ran out" from "killed by a person or another program".
// ok is false where the OS does not say.
func OOMKills() (n int64, ok bool) { return oomKills() }

// parseOOMKills reads oom_kill from /proc/vmstat's "name value" lines.
func parseOOMKills(vmstat []byte) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(vmstat))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		if k == "oom_kill" {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
