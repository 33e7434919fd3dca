// Package sysinfo reads what the operating system says about this machine's
// memory, swap and disk, without cgo, so that it builds for every OS Homering
// runs on (CI vets it for linux, darwin and windows).
//
// # Memory
//
// Memory.Available is d_m^avail of the Halda model: what can be given to the
// model now without swapping.
//   - Linux: /proc/meminfo MemAvailable, capped by every memory cgroup this
//     process is in, v1 (memory.limit_in_bytes, memory.usage_in_bytes) and
//     v2 (memory.max, memory.current), each level up to the root, detected
//     at run time from /proc/self/cgroup and /proc/self/mountinfo. Inside a
//     cgroup, available = limit − usage + file pages (memory.stat
//     total_active_file+total_inactive_file on v1, active_file+inactive_file
//     on v2): page cache, including our own mapped weights, is reclaimable
//     and counts as available, as MemAvailable counts it.
//   - macOS: sysctl hw.memsize; available = (free + speculative + purgeable +
//     file-backed pageable pages) × page size; swap from vm.swapusage.
//   - Windows: GlobalMemoryStatusEx (ullAvailPhys, ullTotalPageFile −
//     ullTotalPhys for swap).
//
// # Disk
//
// ReadThroughput measures sequential (1 MiB requests) and random (64 KiB
// requests at random aligned offsets, a mapped-view fault's cluster size)
// read throughput of a file with our own reads that bypass the page cache:
// O_DIRECT on Linux (posix_fadvise DONTNEED before each pass when the file
// system refuses O_DIRECT), F_NOCACHE on macOS, FILE_FLAG_NO_BUFFERING on
// Windows. Each pass is bounded in bytes and time.
//
// FaultThroughput measures what reading a file through page faults gets:
// the extents given (the engine's read order) are dropped from the page
// cache (posix_fadvise DONTNEED over their span rounded out to 2 MiB, since
// DONTNEED skips a large folio it does not cover whole), mincore confirms
// at most 10% stayed (else ErrFaultCached: another process maps the pages,
// or the file is on tmpfs), and a fresh read-only shared mapping is touched
// one byte per page in that order, the kernel's fault-around and read-ahead
// left as they are. Linux only (ErrFaultUnsupported elsewhere).
//
// # Clock
//
// Now and Since are the profiler's clock for short intervals (a layer's
// decode step, a loopback ping: microseconds): time.Now elsewhere,
// QueryPerformanceCounter on Windows, where Go's clock steps too coarsely
// (by 1 ms under Wine 8.0) and those timings read 0. The profiler times
// with this clock rather than lengthening its loops: the probe's paired
// steps and the pings measure what one step and one round trip cost, and
// repeating them longer would change neither the median nor the load.
package sysinfo
