#!/usr/bin/env bash
# What a chat turn costs before any compute (issue 15 item 2): the time from
# the request to the engine's first prompt pass (ChatStats.start_ms), and
# the planning part of it (plan_ms: looks at peers, Halda, job asks), on
# bench/rig's 3 devices (5 ms ± 1 ms, 300 Mbit links; no memory pressure):
#   (a) this device alone, turns 2+: the single-device path, the baseline
#       (the workers' contribute turned off, so the head plans alone)
#   (b) the ring of 3 (--devices all --rounds 1), turn 1: a fresh ring job
#   (c) the same ring, turns 2+: on the job kept from the turn before
# Every chat is greedy, 1 engine thread per device, 4 tokens of the same
# prompt. Prints medians (with the ring's trace: the prompt's wall time, the
# devices' prompt compute summed, the micro-batch rows of its pipelining), (c) - (a) against the target (<= 20 ms) and the
# ratio (c)/(a). Turn 1 is split into planning and the rest (the head's
# ring links, shipping weight slices, loading windows).
# Model: the quick ring bench model (bench/ring.sh: 20 layers, n_embd 1024,
# Q8_0, 310 MB). BENCH_QUICK=1: 3 turns per row, else 9. Needs root.
#
# BENCH_PIPELINE=1 measures the ring's prompt pipelining instead (issue 19):
# two rig sessions, the head's engine with HOMERING_RING_PIPELINE=off (each
# prefill pass one batch: the baseline), then on (ring.MicroRows
# micro-batches moving through the ring one device behind the other); in
# each, a fresh ring job (turn 1: its dials and plan preparation), then
# kept-job turns whose prompts (a few hundred tokens) differ from the first
# token, so each prefills all of it. Prints per mode the medians of TTFT,
# the prompt passes' wall time, the devices' prompt compute summed and the
# micro-batch rows, and the ratios on/off.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
. build/env.sh
. bench/rig/rig.sh
export HOMERING_PROFILE_QUIET=off # no background measurement mid-case (app/agent/profile_bg.go)

out=bench/out/turns
mkdir -p "$out" testdata/models/bench-ring
go build -o bench/out/ringbench ./bench/ringbench
go build -o "$out/homering" .
[ -x bin/homering ] || go build -o bin/homering .
reps=9
[ -n "${BENCH_QUICK:-}" ] && reps=3
model=testdata/models/bench-ring/llama-300m-Q8_0.gguf
bin/homering gen-model --keep --seed 1 --ctx 4096 --arch llama --vocab 32000 --type Q8_0 \
	--layers 20 --embd 1024 --ff 2816 --heads 8 --kv-heads 2 -o "$model"
model=$root/$model
prompt="Once upon a time, in a small village by the sea, there lived an old fisherman."

homes=$out/homes-$$
cleanup() {
	rig_down
	rm -rf "$out/homes-$$"*
}
. bench/rig/agents.sh
# session: the rig and its agents, which take this shell's environment.
session() {
	rig_up turns 3 $((4096 * 1048576))
	trap cleanup EXIT
	rig_agents 3 '{"context_tokens": 512, "ring_keep_seconds": 600}' 1:2 1:3
}

# chat ARGS...: one greedy chat on the head; prints "start plan ttft
# ring_devices prompt compute micro dial prepare prompt_tokens": the ring's
# trace (issue 19): the prompt's wall time from its first pass to its
# logits, the devices' prompt compute summed, the pipelining's micro-batch
# rows (0 alone), the job's dials and plan preparation (0 on a kept job).
chat() {
	local st
	st=$(rig_cli 1 chat -m "$model" -n 4 --temp 0 --raw --json "$@" "$prompt" 2>&1 >/dev/null | grep '^{' | tail -1) || true
	[ -n "${json_log:-}" ] && echo "$st" >>"$json_log"
	local f
	for f in start_ms plan_ms ttft_ms; do
		printf '%s ' "$(echo "$st" | sed -n "s/.*\"$f\":\([0-9.e+-]*\).*/\1/p")"
	done
	printf '%s ' "$(echo "$st" | awk -F'"short":' '{print NF - 1}')" # devices of the ring run, 0 alone
	echo "$st" | jq -r '[.ring.trace.prompt_ms // 0, ([.ring.devices[]?.prompt_ms // 0] | add // 0), .ring.trace.micro_rows // 0,
		.ring.trace.dial_ms // 0, .ring.trace.prepare_ms // 0, .prompt_tokens // 0] | @tsv' 2>/dev/null | tr '\t' ' ' || echo "0 0 0 0 0 0"
}
median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else printf "%.1f\n", (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
row() { # NAME FILE
	printf '%-34s %10s %10s %10s %10s %10s %6s %4d\n' "$1" "$(cut -d' ' -f1 "$2" | median)" "$(cut -d' ' -f2 "$2" | median)" \
		"$(cut -d' ' -f3 "$2" | median)" "$(cut -d' ' -f5 "$2" | median)" "$(cut -d' ' -f6 "$2" | median)" "$(cut -d' ' -f7 "$2" | median)" "$(wc -l <"$2")"
}

if [ -n "${BENCH_PIPELINE:-}" ]; then
	# A prompt of a few hundred tokens: several micro-batches per device.
	story=$prompt
	for _ in $(seq 14); do story="$story The fisherman went out at dawn, mended his nets and watched the gulls over the water."; done
	for mode in off on; do
		homes=$out/homes-$$-$mode
		HOMERING_RING_PIPELINE=$mode session
		f=$out/pipe-$$-$mode.txt
		prompt="Turn 1. $story" chat --devices all --rounds 1 >"$f.1"
		: >"$f"
		# Each turn's prompt differs from its first token: the kept job
		# prefills all of it (no dials, no preparation).
		for i in $(seq "$reps"); do prompt="Turn $((i + 1)). $story" chat --devices all --rounds 1 >>"$f"; done
		awk '$4 != 3 {bad=1} END {exit bad}' "$f.1" "$f" || { echo "turns bench: a pipelining $mode turn left the ring of 3: $(cat "$f.1" "$f")" >&2; exit 1; }
		rig_down
	done
	echo "turns bench, prompt pipelining: $(basename "$model"), 3 devices, links 5 ms ± 1 ms / 300 Mbit ($RIG_LINK), 1 thread, $(cut -d' ' -f10 "$f.1") prompt tokens, $reps kept turns per row; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	printf '%-34s %10s %10s %10s %6s %10s %10s\n' "kept turns (medians)" "TTFT ms" "prompt ms" "compute" "micro" "wall/comp" "n"
	for mode in off on; do
		f=$out/pipe-$$-$mode.txt
		p=$(cut -d' ' -f5 "$f" | median) c=$(cut -d' ' -f6 "$f" | median)
		printf '%-34s %10s %10s %10s %6s %10s %10s\n' "pipelining $mode" "$(cut -d' ' -f3 "$f" | median)" "$p" "$c" \
			"$(cut -d' ' -f7 "$f" | median)" "$(awk -v p="$p" -v c="$c" 'BEGIN {printf "%.2f", (c > 0 ? p / c : 0)}')" "$(wc -l <"$f")"
	done
	off=$out/pipe-$$-off.txt on=$out/pipe-$$-on.txt
	awk -v t0="$(cut -d' ' -f3 "$off" | median)" -v t1="$(cut -d' ' -f3 "$on" | median)" \
		-v p0="$(cut -d' ' -f5 "$off" | median)" -v p1="$(cut -d' ' -f5 "$on" | median)" 'BEGIN {
		printf "pipelining on/off: TTFT %.2fx, prompt passes %.2fx\n", (t0 > 0 ? t1 / t0 : 0), (p0 > 0 ? p1 / p0 : 0)
	}'
	for mode in off on; do
		read -r s1 p1 t1 _ pr _ _ d1 pp1 _ <"$out/pipe-$$-$mode.txt.1"
		echo "turn 1 (fresh job), pipelining $mode: TTFT $t1 ms = planning $p1 ms, dials $d1 ms, plan preparation $pp1 ms (slices, windows), prompt $pr ms, the rest $(awk -v t="$t1" -v p="$p1" -v d="$d1" -v q="$pp1" -v r="$pr" 'BEGIN {printf "%.0f", t - p - d - q - r}') ms"
	done
	rm -f "$out/pipe-$$-"*
	exit 0
fi

session
ring=$out/ring-$$.txt alone=$out/alone-$$.txt
: >"$ring.1"
: >"$ring"
: >"$alone"
chat --devices all --rounds 1 >"$ring.1"
for _ in $(seq "$reps"); do chat --devices all --rounds 1 >>"$ring"; done
read -r _ _ _ n1 _ _ _ <"$ring.1"
[ "$n1" = 3 ] || { echo "turns bench: turn 1 ran on $n1 device(s), want the ring of 3" >&2; exit 1; }
awk '$4 != 3 {bad=1} END {exit bad}' "$ring" || { echo "turns bench: a later turn left the ring of 3: $(cat "$ring")" >&2; exit 1; }
rig_cli 2 contribute off >/dev/null
rig_cli 3 contribute off >/dev/null
bench/out/ringbench wait-peers -at-most -n 0 -timeout 30s -- env HOMERING_HOME="$root/$homes/d1" \
	nsenter --net="/var/run/netns/${RIG_NS[1]}" -- "$root/$out/homering" peers -json
chat >/dev/null # the head's first chat alone ends the kept ring job
for _ in $(seq "$reps"); do chat >>"$alone"; done
awk '$4 != 0 {bad=1} END {exit bad}' "$alone" || { echo "turns bench: the head did not run alone: $(cat "$alone")" >&2; exit 1; }

echo "turns bench: $(basename "$model"), 3 devices, links 5 ms ± 1 ms / 300 Mbit ($RIG_LINK), 1 thread, $reps turns per row; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-34s %10s %10s %10s %10s %10s %6s %4s\n' "path" "start ms" "plan ms" "TTFT ms" "prompt ms" "compute" "micro" "n"
row "(a) one device, turns 2+" "$alone"
row "(b) ring of 3, turn 1" "$ring.1"
row "(c) ring of 3, turns 2+" "$ring"
a=$(cut -d' ' -f1 "$alone" | median)
c=$(cut -d' ' -f1 "$ring" | median)
awk -v a="$a" -v c="$c" 'BEGIN {
	d = c - a
	printf "turn 2 on the ring adds %.1f ms over one device before the first pass (ratio %.2f); target <= 20 ms: %s\n", d, (a > 0 ? c / a : 0), (d <= 20 ? "met" : "NOT met")
}'
read -r s1 p1 _ _ _ _ _ <"$ring.1"
echo "turn 1: $(awk -v p="$p1" 'BEGIN {printf "%.0f", p}') ms planning (looks at the peers over fresh control links, Halda, job asks), $(awk -v s="$s1" -v p="$p1" 'BEGIN {printf "%.0f", s - p}') ms more before the first pass (the head's ring links, shipping each worker its weight slices, loading the windows)"
awk -v s="$(cut -d' ' -f5 "$ring" | median)" -v c="$(cut -d' ' -f6 "$ring" | median)" -v t="$(cut -d' ' -f3 "$ring" | median)" 'BEGIN {
	printf "ring turns 2+: the prompt passes take %.0f ms (%.2fx the devices prompt compute, %.0f ms summed; pipelining overlaps devices, the rest is transfer and waiting); TTFT %.0f ms\n", s, (c > 0 ? s / c : 0), c, t
}'
rm -f "$ring" "$ring.1" "$alone"
