#!/usr/bin/env bash
# Prefill and decode speed of Homering's window engine (engine/ggml, one
# window [0, L) with embedding and output head) against llama.cpp itself
# (engine/llama's Reference: the pinned ollama/llama, CPU, mmap, F16 KV,
# flash attention off) on the same models, in one process built with the same
# cgo flags (build/env.sh). Prints a table with medians and the ratio
# ours/llama.cpp; the target is >= 1.0 for prefill and decode.
# Both run ggml's kernels on the same graph, except that our prompts of Q8_0,
# Q4_K and Q6_K weights run on engine/ggml/gemm.c's kernels (the same bits;
# BenchmarkPromptKernels in engine/ggml times them against ggml's alone).
#
# Models: the generated ~1 GB llamas (16 layers, n_embd 2048) in Q8_0 and Q4_K,
# prefill 128 tokens then 32 decode steps, 1 and 2 threads, 5 repetitions
# (BENCH_REPS=N to change). BENCH_QUICK=1: stories260K, 1 thread, 1 repetition.
# The engines run back to back (prefill against prefill, each decode step
# against the same step) and the ratio is the median of those pairs' ratios.
# Ours runs once on each variant of our matrix kernels this CPU runs (ggml:
# ggml's own; avx2; avx512: AVX-512 VNNI token steps), a row each (issue 22).
# Each decode row also says how many bytes a step reads (every layer's
# weights, the output head, one embedding row and the K and V so far: not
# the whole file, not the embedding table), the GB/s that makes at each
# engine's speed, and ours as a fraction of this machine's read bandwidth at
# 1 and 2 threads, measured first in the same run (best of 5 sweeps of a
# 1 GiB buffer). Measured 2026-11-26 on a quiet machine (load 0.3): 37.6 GB/s
# at 1 thread, 43.1 at 2: one core reads nearly as much as two, so a 2-thread
# decode of Q8_0 weights at 1.2x llama.cpp's (which reads 36 GB/s) would need
# all of it (../shared/notes/engine-findings.md section 12). The machine
# differs by day: on 2026-11-27 it was an AMD EPYC (Zen 3, AVX2, no AVX-512,
# so no avx512 row) reading 13.0-14.8 GB/s at 1 thread and 24.3-26.7 at 2,
# where the avx2 rows gave decode 1.32-1.34x llama.cpp (Q8_0) and 1.39-1.43x
# (Q4_K) at 1 thread, 1.21-1.29x and 1.40x at 2, and Q8_0 at 1 thread read
# 0.84-0.99 of the read loop's bandwidth (two quiet runs).
# The machine is shared: read the 1-thread rows and the tok/cpu-s columns first;
# 2-thread runs on a busy 2-core machine suffer from ggml's spinning barrier.
# Neither engine leaves a thread spinning between evaluations (see
# bench/enginebench/doc.go), so one does not slow the other down.
# A second table times our engine alone on each of ggml's CPU variant
# libraries a release binary picks from at start (x64, haswell, icelake;
# BENCH_CPU_VARIANTS to change), one child process per run, with each
# variant's speed-up over the baseline x64. Measured 2026-11-26 (~1 GB
# models, 1 thread, tok/s x64 / haswell / icelake): Q8_0 prefill 12.0 /
# 78.1 / 78.9, decode 10.3 / 27.1 / 28.7; Q4_K prefill 1.6 / 23.7 / 34.1,
# decode 1.6 / 17.0 / 18.0 (../shared/notes/platforms-findings.md).
set -euo pipefail
cd "$(dirname "$0")/.."
. build/env.sh
mkdir -p bench/out
go build -o bench/out/enginebench ./bench/enginebench

if [ -n "${BENCH_QUICK:-}" ]; then
	models="$HOMERING_ROOT/../shared/models/stories260K.gguf"
	args=(-threads 1 -reps 1 -prefill 128 -decode 16 -kernels all)
else
	models="testdata/models/llama-1g-Q8_0.gguf,testdata/models/llama-1g-Q4_K.gguf"
	args=(-threads "${BENCH_THREADS:-1,2}" -reps "${BENCH_REPS:-5}" -prefill 128 -decode 32 -kernels "${BENCH_KERNELS:-all}")
fi
for m in ${models//,/ }; do
	[ -f "$m" ] || { echo "bench/engine.sh: $m is missing; run build/setup.sh to generate the test models." >&2; exit 1; }
done

echo "engine vs llama.cpp: CGO_CFLAGS='$CGO_CFLAGS', $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
bench/out/enginebench -models "$models" "${args[@]}"

# Our engine on each of ggml's CPU variant libraries (issues 16 and 22: what
# a release binary, baseline x86-64 itself, runs on by CPUID): x64 (the
# portable path), haswell (AVX2/FMA; gemm.c's prompt kernels too), icelake
# (AVX-512 VNNI), side by side with their ratios to x64. build/gpu-lib.sh cpu
# builds them once (cached).
cpu_dir=$(bash build/gpu-lib.sh cpu | tail -n 1)
echo "engine on ggml's CPU variants ($cpu_dir), load average $(cut -d' ' -f1-3 /proc/loadavg)"
bench/out/enginebench -models "$models" "${args[@]}" -cpu-variants "${BENCH_CPU_VARIANTS:-x64,haswell,icelake}" -cpu-dir "$cpu_dir"

# Our token-step kernels (steps of n = 1..4 tokens: decode, speculation's
# verification passes) against ggml's own at the same CPU variant
# and thread count, one after the other on the same weights (issue 22):
# engine/ggml's BenchmarkTokenKernels, a generated one-layer llama of a 7B's
# matrix shapes (4096x4096, 4096x11008) in Q8_0, Q4_K, Q5_K and Q6_K, 1 thread,
# each variant of our kernels this CPU runs (avx512, avx2); ggml/ours is the
# median of the pairs' ratios (> 1: ours faster), GB/s-ours the bytes a step
# reads (Window.StepBytes, as above) per second of ours: set it against the
# 1-thread read bandwidth of the first table. BENCH_QUICK=1: 20 steps each, else 100.
steps=100
[ -n "${BENCH_QUICK:-}" ] && steps=20
echo "token kernels, ours vs ggml's (same variant), load average $(cut -d' ' -f1-3 /proc/loadavg)"
(cd engine/ggml && go test -run '^$' -bench BenchmarkTokenKernels -benchtime "${steps}x" -count 1 . |
	awk '/^BenchmarkTokenKernels/ {
		for (i = 3; i < NF; i += 2) v[$(i + 1)] = $i
		printf "%-40s ours %7.2f ms/step  ggml %7.2f ms/step  ggml/ours %5.2f  %5.1f GB/s\n", $1, v["ms/step-ours"], v["ms/step-ggml"], v["ggml/ours"], v["GB/s-ours"]
	}')
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
