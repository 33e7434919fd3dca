package testcgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A process started through Wrap is charged to the cgroup, and one that
// asks for more than the limit is killed by the kernel; Remove leaves
// nothing behind.
func TestLimitHolds(t *testing.T) {
	c, err := New(fmt.Sprintf("homering-testcgroup-%d", os.Getpid()), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove()
	argv := c.Wrap("sh", "-c", `cat "$0/cgroup.procs"`, c.Dir)
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	if err != nil {
		t.Fatal(err)
	}
	if len(strings.Fields(string(out))) == 0 {
		t.Fatalf("the wrapped command saw no process in %s", c.Dir)
	}
	// 256 MiB held in one shell variable's worth of memory: over the limit.
	argv = c.Wrap("sh", "-c", `head -c 268435456 /dev/zero | tr '\0' x | { v=$(cat); echo ${#v}; }`)
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err == nil {
		t.Fatalf("256 MiB in a 64 MiB cgroup ran to the end (%q); want it killed", out)
	}
	c.Remove()
	if _, err := os.Stat(filepath.Join(c.Dir)); !os.IsNotExist(err) {
		t.Errorf("%s is still there after Remove (%v)", c.Dir, err)
	}
}
