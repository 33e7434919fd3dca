package sysinfo

import (
	"bytes"
	"os"
	"strconv"
)

// processAnon reads RssAnon from /proc/self/status: a counter the kernel
// keeps, cheap to read, unlike smaps_rollup, which walks every page of the
// model's mapping.
func processAnon() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return parseRssAnon(b)
}

// processAnonOf reads RssAnon from /proc/PID/status.
func processAnonOf(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	return parseRssAnon(b)
}

func parseRssAnon(status []byte) int64 {
	_, rest, ok := bytes.Cut(status, []byte("\nRssAnon:"))
	if !ok {
		return 0
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) == 0 {
		return 0
	}
	n, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return 0
	}
	if len(f) > 1 && string(f[1]) == "kB" {
		n *= 1024
	}
	return n
}
