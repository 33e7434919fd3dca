package sysinfo

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ReadAheadBytes is the read-around of a page fault on the block device
// holding path: its queue's read_ahead_kb (a partition's is its disk's).
// A fault on a missing page of a mapping reads about this much around it.
// ok is false where sysfs does not say (a file system without a block
// device: tmpfs, overlay, network).
func ReadAheadBytes(path string) (int64, bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, false
	}
	dev := fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	for _, q := range []string{filepath.Join(dev, "queue", "read_ahead_kb"), filepath.Join(dev, "..", "queue", "read_ahead_kb")} {
		b, err := os.ReadFile(q)
		if err != nil {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || kb < 0 {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}
