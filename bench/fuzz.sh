#!/usr/bin/env bash
# Fuzzes the decoders a hostile peer reaches first (issue 21 item 5): the
# transport's frame and Hello reader and the ring's wire codec. Each target
# runs FUZZTIME (default 10m; BENCH_QUICK=1: 20000 inputs, since build/test.sh's
# fuzz stage already gives each ~15 s) through build/fuzz.sh. Inputs the fuzzer
# found new coverage with are merged into the package's testdata/fuzz/TARGET/ (not in quick runs),
# so `go test` replays them from then on; commit the ones worth keeping.
# A failing input is written there too by Go itself, and the script fails.
set -euo pipefail
cd "$(dirname "$0")/.."
. build/env.sh
fuzztime=${FUZZTIME:-10m}
[ -n "${BENCH_QUICK:-}" ] && fuzztime=20000x
targets=(
	"./engine/ring/transport FuzzReadFrame"
	"./engine/ring/wire FuzzDecode"
	"./engine/ring/wire FuzzF16"
)
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
printf '%-26s %-14s %10s %12s %8s\n' package target time execs new
for t in "${targets[@]}"; do
	read -r pkg target <<<"$t"
	mkdir -p "$cache/$target" # stays empty when nothing new is found
	out=$(bash build/fuzz.sh "$pkg" "$target" "$fuzztime" -args -test.fuzzcachedir="$cache" 2>&1) || {
		printf '%s\n' "$out"
		exit 1
	}
	# The last progress line: "fuzz: elapsed: 20s, execs: 123456 (...), new interesting: 7 (total: 12)"
	execs=$(grep -o 'execs: [0-9]*' <<<"$out" | tail -n 1 | cut -d' ' -f2 || true)
	found=$(find "$cache/$target" -type f | wc -l)
	if [ -z "${BENCH_QUICK:-}" ] && [ "$found" -gt 0 ]; then
		mkdir -p "$pkg/testdata/fuzz/$target"
		cp -n "$cache/$target"/* "$pkg/testdata/fuzz/$target/" 2>/dev/null || true
	fi
	printf '%-26s %-14s %10s %12s %8s\n' "$pkg" "$target" "$fuzztime" "${execs:-?}" "$found"
done
