#!/usr/bin/env bash
# The soak (issue 21 item 4): app/apptest's TestSoak, three agents in
# network namespaces, one ring, chats on the head back to back (varied
# prompts and lengths, every eighth one asking for more tokens than the
# context holds) while each chat's speed, the devices' memory pressure and
# each agent's and engine child's anonymous memory, fds, goroutines, slice
# cache and log are sampled. Prints each series' slope per hour and fails
# on growth (its doc comment has the bounds).
#
# BENCH_QUICK=1: stories260K, 90 s. Full: 2 hours on a generated llama of
# ~1 GB (the chaos run's model, kept in testdata/models/bench-chaos/).
# SOAK_DURATION (a Go duration) and SOAK_SEED change the run. Agent logs go
# to nowhere but the test's output, kept in bench/out/soak[-quick]/last.log.
set -euo pipefail
cd "$(dirname "$0")/.."
. build/env.sh
. bench/rig/model1g.sh
out=bench/out/soak${BENCH_QUICK:+-quick}
mkdir -p "$out"
export HOMERING_SOAK_SEED=${SOAK_SEED:-1}
[ -n "${SOAK_DURATION:-}" ] && export HOMERING_SOAK_DURATION=$SOAK_DURATION
timeout=15m
if [ -n "${BENCH_QUICK:-}" ]; then
	export HOMERING_SOAK=quick
else
	export HOMERING_SOAK=full
	HOMERING_SOAK_MODEL=$(model_1g)
	export HOMERING_SOAK_MODEL
	timeout=4h
fi
echo "soak: $HOMERING_SOAK, seed $HOMERING_SOAK_SEED; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
go test -count=1 -run '^TestSoak$' -v -timeout "$timeout" ./app/apptest/ 2>&1 | tee "$out/last.log" | grep -v '^time=' | grep -E 'soak_test|^(--- |ok|FAIL|PASS)'
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
