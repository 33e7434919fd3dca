#!/usr/bin/env bash
# Speculative decoding (issue 19 item 2): greedy replies with a draft model
# that proposes k tokens and the target verifying them in one pass, against
# the same engine unspeculated, on one device and through a ring of three
# devices in one process (loopback links, no emulated latency; bench/ring.sh
# runs the rig), tokens checked identical (column "same").
#
# Random weights make a draft's acceptance meaningless, so the pair's
# agreement is controlled (engine/modelgen's quiet layers, `homering
# gen-model -quiet-from N -quiet-scale S`): the target is a generated llama
# whose layers from the first on have their output projections (attn_output,
# ffn_down) scaled by S, so that they barely change the residual stream; the
# draft is the same seed's one-layer model, whose tensors are the target's
# first layer, embedding and output head byte for byte. S = 0.045 gives
# about 70% acceptance at k = 3.
#
# Prints the cost of verifying n tokens in one pass of the target relative
# to evaluating one, and per engine the time per output token (decode time,
# drafting included, over tokens evaluated) unspeculated and speculated,
# their ratio and the acceptance rate. Target (issue 19): at 70% acceptance,
# TPOT <= 0.6x the unspeculated ring.
#
# Full: a 16-layer llama, n_embd 1024, vocabulary 8000, Q8_0 (~220 MB, in
# testdata/models/bench-spec/, kept across runs), 64 tokens, k = 3.
# BENCH_QUICK=1: 8 layers, n_embd 512, 24 tokens. BENCH_SCALE, BENCH_K and
# BENCH_TOKENS change S, k and the tokens. One thread per device.
set -euo pipefail
cd "$(dirname "$0")/.."
. build/env.sh
mkdir -p bench/out
go build -o bench/out/specbench ./bench/specbench

args=(-scale "${BENCH_SCALE:-0.045}" -k "${BENCH_K:-3}" -draft-layers 1 -threads 1)
if [ -n "${BENCH_QUICK:-}" ]; then
	args+=(-layers 8 -embd 512 -ff 1408 -heads 8 -vocab 4000 -tokens "${BENCH_TOKENS:-24}" -reps 3)
else
	args+=(-layers 16 -embd 1024 -ff 2816 -heads 16 -vocab 8000 -tokens "${BENCH_TOKENS:-64}" -reps 7)
fi
echo "speculative decoding: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
bench/out/specbench "${args[@]}"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
