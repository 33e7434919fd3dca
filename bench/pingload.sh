#!/usr/bin/env bash
# How fast a ring worker answers pings under load (issue 21 item 2): the
# driver's BenchmarkPongUnderLoad (a worker driver answering pings while its
# own process hashes a mapped, paged-out file on every CPU) at nice 10, as
# a serving runner is, with 3 CPU burners (nice 0) and a process paging
# through a 1 GiB file under a 128 MiB memory cap beside it. Runs twice: as
# root (the link reader's thread raises itself back to nice 0) and as
# nobody (it cannot: it stays at nice 10); then as root once more inside a
# memory cgroup of its own capped below the file it hashes, so that the
# pinging process itself pages under its cap (as a device whose window does
# not fit). Prints the round trips' percentiles, the load average and, for
# the capped run, its major faults. Needs root and cgroup v1 or v2 memory.
# Each run pings PINGS times after the benchmark's warm-up round (which,
# like any round, pings at least 500 times): 1000, or 200 with BENCH_QUICK=1,
# so build/test.sh's run once at the quick size is ~1000 pings a run instead
# of 1500 (~200 ms each under this load; measured here, the script took 914 s).
set -euo pipefail
cd "$(dirname "$0")/.."
. build/env.sh
out=$(mktemp -d)
pids=()
cg="" cg2=""
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ -n "$cg" ] && rmdir "$cg" 2>/dev/null || true
	[ -n "$cg2" ] && rmdir "$cg2" 2>/dev/null || true
	rm -rf "$out"
}
trap cleanup EXIT
pings=1000
[ -n "${BENCH_QUICK:-}" ] && pings=200
go test -c -o "$out/driver.test" ./engine/ring/driver/
chmod 1777 "$out"; chmod 755 "$out/driver.test"
for _ in 1 2 3; do
	sh -c 'while :; do :; done' &
	pids+=($!)
done
# The pager: reads a 1 GiB file through a mapping, over and over, in a
# cgroup whose cap makes it fault most pages back in from disk.
head -c $((1 << 30)) /dev/urandom >"$out/big"
if [ -d /sys/fs/cgroup/memory ]; then
	cg=/sys/fs/cgroup/memory/pingload.$$ cg2=/sys/fs/cgroup/memory/pingload-self.$$
	mkdir "$cg" "$cg2" && echo $((128 << 20)) >"$cg/memory.limit_in_bytes" && echo $((96 << 20)) >"$cg2/memory.limit_in_bytes"
	faults_key=total_pgmajfault
else
	cg=/sys/fs/cgroup/pingload.$$ cg2=/sys/fs/cgroup/pingload-self.$$
	mkdir "$cg" "$cg2" && echo $((128 << 20)) >"$cg/memory.max" && echo $((96 << 20)) >"$cg2/memory.max"
	faults_key=pgmajfault
fi
sh -c "echo \$\$ >$cg/cgroup.procs; exec python3 -c '
import mmap, os
f = open(\"$out/big\", \"rb\"); m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
while True:
    for off in range(0, len(m), 4096): m[off]
'" &
pids+=($!)
sleep 3
run() { # $1: label; the rest: how to run the benchmark
	local label=$1
	shift
	echo "== $label (load average $(cut -d' ' -f1-3 /proc/loadavg))"
	TMPDIR=$out "$@" nice -n 10 "$out/driver.test" -test.run XXX -test.bench PongUnderLoad -test.benchtime ${pings}x | grep Benchmark
}
run "root: reader thread raised to nice 0"
run "nobody: reader thread left at nice 10" setpriv --reuid=nobody --regid=nogroup --clear-groups
# The benchmark's process in a 96 MiB cgroup: its 256 MiB mapping (and its
# own code) page under the cap.
f0=$(awk -v k="$faults_key" '$1 == k {print $2}' "$cg2/memory.stat")
# Where its files in mktemp's /tmp are not reclaimable page cache (a tmpfs or
# overlay root, as in a fresh-machine chroot) the cap kills the process
# instead of paging it: said in one line, the two runs above stand.
if run "root, paging under a 96 MiB cap of its own" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg2"; then
	echo "   major faults under the cap: $(($(awk -v k="$faults_key" '$1 == k {print $2}' "$cg2/memory.stat") - f0))"
else
	echo "   no result: the benchmark did not finish under its 96 MiB cap (on $(stat -f -c %T "$out"), whose pages may not be reclaimable)"
fi
