#!/usr/bin/env bash
# Halda's prediction from a measured profile vs measured decode time.
#
# R repetitions, each going through every model × thread count (interleaved,
# so a slow spell of the shared machine hits every row alike) with: a fresh
# `homering profile --model M --threads T --json` (engine/profile), Halda's
# single-device prediction from it (`homering plan --devices me.json --model M
# --context 256 --rounds 1`: the KV length the engine pads to, and one window
# per token, which is what is measured), and a measured decode (one window
# [0, L) of engine/ggml, median ms/token of its steps after two warm-up
# steps). "predicted"/"measured" are the medians over reps; "spread" is the
# measured reps' (max − min)/median, the noise. Then calibration as the
# agent does it (engine/profile/calib, app/agent/profile_calib.go): one profile
# (the median rep's, standing for the agent's cached one) calibrated with
# the median of the ratios of measured to its predicted ms, one per
# calibration step (calib.Ratio, FromRatios), re-planned, and compared with
# the median of the held-out steps. Each rep decodes 2 x tokens steps, which
# alternate: calibration, held out, calibration, ... so that the shared
# machine's changes of speed (two runs of 12 steps seconds apart differed
# by up to 14% either way) hit both alike and do not pose as calibration
# error. Like the agent, which predicts the next step from those just
# before it (rolling medians).
#
# Targets: whole model resident ±15% before calibration and ±5% after, for 1
# and 2 threads; under a memory cgroup smaller than the model (weights read
# from disk every token; v1 memory.limit_in_bytes or v2 memory.max, set up
# and torn down here) ±25% before calibration.
#
# Under the cgroup the profile's page-fault throughput (not the O_DIRECT
# one) prices the re-read weights: see halda's package doc. One window that
# does not fit re-reads all its weights every token (the kernel's LRU
# against a cyclic sweep; /proc/self/io shows 841 MB read per token for 837 MB of layer
# and output weights read per token at a 55% limit), which is what Halda
# charges when a window does not fit. Halda's plan for this device alone
# would take k = 2 rounds and charge only the overflow (eq. 15), which
# needs an engine that keeps a fixed part resident: not measured here.
#
# Models: testdata/models/llama-1g-{Q8_0,Q4_K}.gguf (build/gen-models.sh).
# BENCH_QUICK=1: the Q4_K model, 1 thread, 2 reps of 5 + 5 tokens
# (calibration and held out), and the cgroup row with 3 reps of 2 + 2
# tokens. BENCH_REPS, BENCH_TOKENS override. The machine is shared: the
# load average is printed; the per-rep values show the noise.
set -euo pipefail
cd "$(dirname "$0")/.."
. build/env.sh
# Own binaries (other benches build bench/out/homering too) and a work
# directory on disk: /tmp may be tmpfs, whose pages a cgroup cannot evict.
out=bench/out/profile
mkdir -p "$out"
go build -o "$out/homering" .
go build -o "$out/profilebench" ./bench/profilebench
work=$(mktemp -d -p "$PWD/bench/out")
export HOMERING_HOME="$work/home"
. bench/rig/memcg.sh
cleanup() {
	memcg_cleanup
	rm -rf "$work"
}
trap cleanup EXIT

if [ -n "${BENCH_QUICK:-}" ]; then
	models="testdata/models/llama-1g-Q4_K.gguf"; threads="1"; reps=${BENCH_REPS:-2}; tokens=${BENCH_TOKENS:-5}
	cgmodel="testdata/models/llama-1g-Q4_K.gguf"; cgreps=3; cgtokens=2
else
	models="testdata/models/llama-1g-Q8_0.gguf,testdata/models/llama-1g-Q4_K.gguf"; threads="1,2"
	reps=${BENCH_REPS:-6}; tokens=${BENCH_TOKENS:-8}
	cgmodel="testdata/models/llama-1g-Q8_0.gguf"; cgreps=${BENCH_REPS:-4}; cgtokens=4
fi
for m in ${models//,/ } $cgmodel; do
	[ -f "$m" ] || { echo "bench/profile.sh: $m is missing; run build/gen-models.sh (build/setup.sh does)." >&2; exit 1; }
done

echo "profile vs measured: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), reps=$reps tokens=$tokens"
rows="$work/rows.jsonl"
"$out/profilebench" run -homering "$out/homering" -model "$models" -threads "$threads" -reps "$reps" -tokens "$tokens" -dir "$work" >> "$rows"

# The memory cgroup: limit = 55% of the model, so that most weights are
# re-read every token. v2 when the unified hierarchy has the memory
# controller, else v1.
size=$(stat -c %s "$cgmodel")
limit=$(( size * 55 / 100 ))
name="homering-bench-$$"
memcg_make "$name" "$limit" bench/profile.sh
echo "memory cgroup $memcg: limit $((limit >> 20)) MiB for a $((size >> 20)) MiB model"
# A private copy: page cache pages another process maps (a concurrent bench
# on the shared models) cannot be evicted and are charged to its cgroup, so
# they would never be read from disk here.
# Written back before anything is timed: fadvise cannot drop dirty pages,
# and a gigabyte of writeback under way slowed the profile's disk probe
# below Halda's 100 MB/s paging threshold in one fresh-machine run (no plan).
cp "$cgmodel" "$work/paging.gguf"
sync "$work/paging.gguf"
"$out/profilebench" evict -model "$work/paging.gguf"
memcg_run \
	"$out/profilebench" run -homering "$out/homering" -model "$work/paging.gguf" -threads 1 -reps "$cgreps" -tokens "$cgtokens" -label paging -evict -dir "$work" >> "$rows"

"$out/profilebench" table < "$rows"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
