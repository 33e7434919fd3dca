#!/usr/bin/env bash
# Runs one Go fuzz target: build/fuzz.sh PKG TARGET BUDGET [go test args...]
# BUDGET is what -fuzztime takes. build/test.sh gives counts ("150x"): Go's
# coordinator (go1.26) can fail a duration-bounded run with a bare "context
# deadline exceeded" when the deadline fires while a worker is mid-input
# (go.dev/issue/75804, fixed in go1.27; CI failed on it at beb1d9c with
# FuzzDecode at 2s). A count has no deadline to race. A duration (long runs
# of bench/fuzz.sh) can still hit it, so that one failure is told apart: no
# failing input written, and the package's tests, which replay the corpus,
# pass. Any other failure fails this script with go test's output.
set -uo pipefail
pkg=$1 target=$2 budget=$3
shift 3
out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "$budget" "$pkg" "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" = 0 ] && exit 0
if [[ "$budget" != *x ]] && grep -q '^    context deadline exceeded$' <<<"$out" &&
	! grep -q 'Failing input written' <<<"$out"; then
	echo "fuzz: $target ended on go1.26's fuzztime race (go.dev/issue/75804), no input failed; replaying its corpus"
	go test -count=1 -run "^${target}\$" "$pkg" && exit 0
fi
echo "fuzz: $target failed" >&2
exit 1
