package sysinfo

// ProcessAnon is this process's resident anonymous (private) memory in
// bytes: what it holds that the OS cannot drop the way it drops page cache
// (a ring device's KV caches and buffers; its mmap'd weights are file
// pages). 0 where the OS does not say.
func ProcessAnon() int64 { return processAnon() }
