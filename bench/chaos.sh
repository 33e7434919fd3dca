#!/usr/bin/env bash
# The chaos run (issue 21 item 1): app/apptest's TestChaos, agents in
# network namespaces chatting through the API while a seeded random
# schedule kills, freezes, restarts, cuts off (iptables DROP, no FIN),
# slows (CPU burners) and re-adds devices, the head's engine child
# included. The test asserts and prints the outcome: every request ends
# within its bound with the unfaulted greedy reply or an error sentence,
# no agent crashes, fds/goroutines/anonymous memory back to idle, and the
# recovery times' distribution (its doc comment has the details).
#
# BENCH_QUICK=1: stories260K, 3 agents, 20 events (~1.5 minutes).
# Full: a generated llama of ~1 GB (18 layers, n_embd 2048, Q8_0, kept in
# testdata/models/bench-chaos/), 3 agents, 100 events, 32 tokens a chat.
# CHAOS_SEED, CHAOS_EVENTS, CHAOS_NODES (3-5) change the run. Agent logs
# go to bench/out/chaos/agent-*.log (quick: bench/out/chaos-quick/), the
# test's output to last.log beside them. Needs root and iptables.
set -euo pipefail
cd "$(dirname "$0")/.."
. build/env.sh
. bench/rig/model1g.sh
out=bench/out/chaos${BENCH_QUICK:+-quick}
mkdir -p "$out"
export HOMERING_CHAOS_OUT=$PWD/$out
export HOMERING_CHAOS_SEED=${CHAOS_SEED:-1}
[ -n "${CHAOS_EVENTS:-}" ] && export HOMERING_CHAOS_EVENTS=$CHAOS_EVENTS
[ -n "${CHAOS_NODES:-}" ] && export HOMERING_CHAOS_NODES=$CHAOS_NODES
timeout=10m
if [ -n "${BENCH_QUICK:-}" ]; then
	export HOMERING_CHAOS=quick
else
	export HOMERING_CHAOS=full
	HOMERING_CHAOS_MODEL=$(model_1g)
	export HOMERING_CHAOS_MODEL
	timeout=3h
fi
echo "chaos run: $HOMERING_CHAOS, seed $HOMERING_CHAOS_SEED; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
go test -count=1 -run '^TestChaos$' -v -timeout "$timeout" ./app/apptest/ 2>&1 | tee "$out/last.log" | grep -v '^time=' | grep -E 'chaos_test|^(--- |ok|FAIL|PASS)'
