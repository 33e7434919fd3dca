package sysinfo

// ProcessAnon is this process's resident anonymous (private) memory in
// bytes: what it holds that the OS cannot drop the way it drops page cache
// (a ring device's KV caches and buffers; its mmap'd weights are file
// pages). 0 where the OS does not say.
func ProcessAnon() int64 { return processAnon() }

// ProcessAnonOf is another process's resident anonymous memory in bytes
// (the agent reads its engine child's), 0 for pid ≤ 0, a process that is
// gone, or where the OS does not say (only Linux says yet).
func ProcessAnonOf(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	return processAnonOf(pid)
}
