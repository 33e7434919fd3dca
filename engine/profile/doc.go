// Package profile measures this device for Halda (prima.cpp's device
// profiler, 000/001 A.3; ../shared/notes/papers-digest.md §1.1.4) and the
// links to its peers, and caches the result. It runs in the runner process:
// it calls ggml through engine/ggml.
//
// # Device profile
//
// Measure returns a Profile; Profile.Device converts it to halda.Device, the
// JSON `homering profile --json` prints and `homering plan --devices` reads.
//
//   - CPU FLOPS per weight type (s^{cpu,q}), with ggml's own mul_mat kernels
//     on the CPU backend and the thread count windows will use
//     (engine/ggml/profile.c). For each weight matrix shape of the model's
//     first layer (q, k, v, o, gate, up, down) the product of the matrix by
//     one F32 column — a decode step — is timed twice: hot (weights in L2;
//     the per-row slope of two sizes, so the per-op barrier is left out) and
//     cold (copies of the matrix cycled through 128 MiB, more than any
//     last-level cache, so the weights stream from RAM as in a real token).
//     s^q = the layer's FLOPs of type q / their hot time. Every type of the
//     model's weight matrices, in any layer or the head (WeightTypes: a
//     mixed file such as Q4_K_M holds Q6_K in some layers only), plus F32,
//     F16, Q4_0, Q8_0, Q4_K, Q5_K and Q6_K is measured (hot, at the layer's
//     width, when the first layer does not hold it); the i-quants and MXFP4
//     too (the 2- and 1-bit i-quants' blocks are random codebook indices
//     with scale 1, not quantized: ggml builds their tables in 2-13 s and
//     their kernels' speed does not depend on the indices).
//   - Memory read throughput 𝒯^cpu = the layer's weight bytes / (cold − hot
//     time of its products): what reading the weights costs beyond computing
//     on them, measured with ggml's kernel at the tensors' sizes as the
//     paper asks ("with data volumes similar to the tensor sizes"). So
//     Halda's per-layer time f/s + b/𝒯 is the measured decode-step time of
//     the layer's products. With a model, the layer probe refines it: decode
//     steps of windows [0, 1) and [0, 1+n), n = min(L−1, 4), of the real
//     model on the engine (the thesis's layer-range probe), stepped in turn
//     and reduced by the median of the paired differences so that machine
//     noise hits both alike, give one whole layer's time (attention, norms,
//     rope and per-op costs included), and 𝒯 is set so that
//     f/s + b'/𝒯 at the probe's 256-token KV equals it. When the hot
//     rates put more than half the probed layer in compute (a busy machine
//     preempting a pool thread wrecks their two-size slope: 0.2-0.5 GFLOPS
//     for q8_0 with 2 threads against 20 with 1), every rate is raised so
//     that compute is half of it (Probe.FlopsScale): the layer keeps its
//     measured time. A probe that
//     measures nothing (noise) falls back to the matmul split. The plain
//     streaming read bandwidth (MemReadBytesPerSec) is reported beside it.
//   - RAM total and available, swap, and the memory cgroup limit
//     (engine/profile/sysinfo: Linux MemAvailable and cgroup v1/v2, macOS
//     sysctl, Windows GlobalMemoryStatusEx). Read fresh on every Get.
//   - GPUs and their free memory from ggml's backend registry (on a Mac the
//     Metal device's memory is its recommended working set). GPU FLOPS are
//     not measured yet, so Device leaves GPU empty: Halda plans the CPU.
//   - Disk sequential and random read throughput of the disk holding the
//     model, by our own reads that bypass the page cache (sysinfo). Without
//     a model (or with one under 64 MiB) a scratch file on that disk is used.
//     Scratch files a killed measurement left (older than an hour) are
//     removed first (sysinfo.RemoveStaleScratch).
//   - Page-fault read-around (Disk.ReadAheadBytes, Halda's
//     disk_read_ahead_bytes): the read_ahead_kb of the block device holding
//     the model (Linux; sysinfo.ReadAheadBytes). A fault reads this much
//     around a missing page, so a MoE model's missed expert, read in
//     slices smaller than it, pulls its neighbours in too.
//   - Page-fault read throughput (Disk.FaultBytesPerSec, Halda's
//     disk_fault_read_bytes_per_s): what a device paging its weights gets.
//     Large direct reads overstate it (1.5 GB/s O_DIRECT against 0.6-0.9
//     GB/s on this machine): the engine reads weights through faults on its
//     mapping, in graph order (q, v, k, o, gate, up, down), while files
//     store a layer's tensors by name, so read-ahead restarts at every
//     backward jump. Three regions (a quarter, half and three quarters into
//     the model, FaultBytes/3 each, 288 MiB in all by default) are evicted
//     (POSIX_FADV_DONTNEED over the span rounded to 2 MiB, for large
//     folios; mincore checks that ≤ 10% stayed) and swept one byte per page
//     in that order with one thread; the median rate is kept. When the
//     model is too small, or its pages stay cached because another process
//     maps them, a scratch file next to it is laid out as copies of its
//     middle layer (without a model: the default layer, stored by name).
//     Linux only; elsewhere, or when even a scratch file cannot be evicted
//     (tmpfs), it is 0 and Halda uses the direct-read throughputs. The
//     sweep evicts those layers of the model: its next decode reads them
//     again once.
//   - OS, architecture, CPU model, backends.
//
// Options.Progress is told each step (every timed shape, memory, the
// layer probe, disk, page faults) before it runs and once at the end, and
// Measure stops at the next step when its context ends: the agent's
// background measurement (`homering profile --progress`, a child process)
// draws it as a progress bar and stops it when a chat starts.
//
// The whole measurement takes about 4-6 s with one thread on this 2-core
// machine (bounded: 120 ms per matmul shape, 256 MiB of memory reads, ≤ 0.8 s
// + 0.5 s of disk, 288 MiB of page faults, 22 probe steps); with as many
// threads as a busy machine has cores, ggml's spinning barrier makes it much
// slower.
//
// # Cache
//
// Cache stores one file per key in a directory (app/config's directory plus
// "profiles"). The key is a hardware fingerprint (OS, architecture, CPU
// model and count, RAM, host name, GPUs; not a cgroup limit) plus a hash of
// what was measured (thread count and layer shapes). Each file holds the
// profile and the SHA-256 of its compact JSON (engine/profile/envelope, the
// same format as app's calibration ratios); an entry that cannot be read,
// does not parse, fails the checksum, names another key or version, or holds
// a non-positive rate is measured again and overwritten, never trusted. An
// entry older than MaxAge is served at once and re-measured in a background
// goroutine (Wait waits for it): a chat is never blocked by profiling.
//
// Due(entries, now, maxAge, threads, types) says why a measurement is due
// ("" when none is): no valid entry (Cache.Entries) with that thread count,
// only ones older than maxAge, or none that rates every weight type of the
// model about to run (ModelTypes). The agent asks it before measuring in
// the background.
//
// LoadCached(configDir) (Profile, ok, error) only reads: this machine's
// newest entry that passes every check above, Memory read fresh; ok is false
// when there is none or only untrustworthy ones. The agent's device map and
// the ring planner call it, so they plan with the measured profile and never
// wait for a measurement.
//
// # Links
//
// MeasureLink measures an established transport.Conn (mutual-TLS websocket)
// with MsgPing frames the peer echoes as MsgPong: the idle RTT (median of 7
// small pings) and the round trip of hidden-state-sized payloads, giving the
// throughput 2·bytes/(RTT_hidden − RTT) and Halda's t^comm = RTT/2 +
// bytes/throughput (halda.Device.LinkSec).
//
// # Calibration
//
// Subpackage calib turns measured per-token compute and link times into
// calibrated coefficients (rolling medians) and recomputes the plan's
// prediction with them; the agent feeds it every run's measured times as
// ratios to the uncalibrated prediction (calib.Ratio, calib.FromRatios).
package profile
