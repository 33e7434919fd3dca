// Package testcgroup makes limited memory cgroups for tests (v1 below this
// process's own memory cgroup, as bench/rig's rig.sh does, or v2 with the
// memory controller enabled), runs commands inside them and removes them.
// Tests that need one run as root, which build/test.sh does; on a machine
// without a memory controller New says so. Only tests import this package.
package testcgroup
