//go:build linux

package apptest

import (
	"homering/engine/profile/sysinfo"
	"homering/internal/testcgroup"
)

// cgroupPressure is the cgroup's non-reclaimable memory (usage less file
// pages, which include the mapped weights the kernel may evict) over its
// limit: what engine/ring/job reports for a device in a cgroup, read from
// outside through the profiler's own reader. A node capped with a memory
// cgroup (made as bench/rig makes its devices') reports the pressure of its
// own processes; outside one it reports the machine's drop of available
// memory, which any other work on the machine moves.
func cgroupPressure(c *testcgroup.Cgroup) (float64, error) {
	cg, err := sysinfo.ReadCgroupDir(c.Dir)
	if err != nil {
		return 0, err
	}
	return float64(cg.Usage-cg.File) / float64(cg.Limit), nil
}
