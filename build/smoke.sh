#!/usr/bin/env bash
# A smoke test of one release binary, the same on Linux, macOS and Windows (Git
# Bash on a windows-latest runner): `version`; a generated random-weight model
# (so that no model file is needed); a greedy 16-token `run` on it, printed to
# OUTDIR/run.txt for comparing across OSes; then the agent (`headless`, or
# with --tray the tray agent, `homering tray`) serving a chat
# completion on its loopback OpenAI API, and `status --json` through it.
# build/release-test.sh runs it on the .deb's binary; the release workflow
# on the real Windows exe.
# Usage: build/smoke.sh [--tray] BIN OUTDIR
set -euo pipefail
mode=headless
if [ "${1:-}" = --tray ]; then
	mode=tray
	shift
fi
bin=${1:?usage: build/smoke.sh [--tray] BIN OUTDIR}
out=${2:?usage: build/smoke.sh [--tray] BIN OUTDIR}
mkdir -p "$out"
say() { printf 'smoke: %s\n' "$*" >&2; }

"$bin" version
"$bin" gen-model --arch llama --layers 2 -o "$out/m.gguf" >/dev/null
"$bin" run -m "$out/m.gguf" -n 16 --temp 0 "Once upon a time" >"$out/run.txt" 2>"$out/run.err"
[ -s "$out/run.txt" ] || {
	say "FAIL: run printed nothing"
	cat "$out/run.err" >&2
	exit 1
}
say "run: $(wc -c <"$out/run.txt") bytes"

home=$out/home
rm -rf "$home"
mkdir -p "$home"
if [ $mode = tray ]; then
	HOMERING_HOME=$home "$bin" tray --model "$out/m.gguf" >"$out/agent.log" 2>&1 &
else
	HOMERING_HOME=$home "$bin" headless --model "$out/m.gguf" >"$out/agent.log" 2>&1 &
fi
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
url=
for _ in $(seq 240); do
	if [ -s "$home/api.json" ]; then
		url=$(sed -n 's/.*"url": *"\([^"]*\)".*/\1/p' "$home/api.json")
		[ -n "$url" ] && break
	fi
	kill -0 $pid 2>/dev/null || break
	sleep 0.25
done
if [ -z "$url" ]; then
	say "FAIL: the $mode agent wrote no api.json in 60 s"
	cat "$out/agent.log" >&2
	exit 1
fi
reply=$(curl -sS --max-time 120 "$url/v1/chat/completions" -H 'Content-Type: application/json' \
	-d '{"model":"m","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":8,"temperature":0}')
case $reply in *'"content":"'[!\"]*) ;; *)
	say "FAIL: no chat completion from the $mode agent: $reply"
	cat "$out/agent.log" >&2
	exit 1
	;;
esac
say "$mode agent at $url answered a chat completion"
HOMERING_HOME=$home "$bin" status --json >"$out/status.json"
say "status --json: $(wc -c <"$out/status.json") bytes"
