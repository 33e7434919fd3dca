#!/usr/bin/env bash
# Issue 16 item 3's ring of a Linux head and a Windows worker: bin/homering.exe
# under Wine runs `headless` (contributing) in a network namespace of its own,
# bin/homering `headless` runs in another, joined by a veth pair. The head
# finds the worker over mDNS (or, when none arrives in 10 s, adds it by
# address), they pair by code as a person does (`pair -no-wait -json` on the
# worker, `pair ADDR CODE` on the head), and a greedy 48-token chat forced
# across both devices (--devices all, in one round and in two; a generated
# 6-layer Q8_0 llama so that both get layers) must print the same text as the
# head alone, which is measured first, before pairing. Real agents, real TLS
# links, real Wine; the worker's engine is homering.exe's own runner child.
#
# Needs bin/homering (build/setup.sh) and bin/homering.exe plus the cached
# Wine prefix (build/windows.sh). Run as root (namespaces). Every wait is
# bounded and the trap removes the namespaces, the processes and the worker's
# wineserver. Prints what it measured; exits non-zero on any failure.
#
# Wine, as found here (Wine 8.0):
#   - wineserver creates the sockets of its clients, so the worker's Wine
#     must have a wineserver of its own started inside the worker's
#     namespace: the worker runs on a private copy of the cached prefix
#     (cp -a, ~2 s), never sharing a wineserver with Wine elsewhere.
#   - GetAdaptersAddresses fails ("Invalid data") when the default route
#     has no gateway (`default dev lan0`), and Go's net.Interfaces with it:
#     each side's default route goes via the other's address instead.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
. build/windows.sh
homering_win_prefix # WINEPREFIX: the cached prefix, created when missing

ringlog() { printf 'wine-ring: %s\n' "$*" >&2; }
t0=$(date +%s.%N)
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f s", b-a}'; }

for f in bin/homering bin/homering.exe bin/lpsolve55.dll; do
	[ -f "$f" ] || { ringlog "FAIL: $f is missing (build/setup.sh, build/windows.sh)"; exit 1; }
done

tmp=$(mktemp -d /tmp/homering-wine-ring.XXXXXX)
ns=hwr$(head -c3 /dev/urandom | od -An -tx1 | tr -d ' \n')
nsh=$ns-h nsw=$ns-w
head_ip=10.77.1.1 worker_ip=10.77.1.2
wprefix=$tmp/wineprefix
pids=()

cleanup() {
	local rc=$? p
	trap '' INT TERM # a second signal must not cut the cleanup short
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	# wineserver -k ends every Wine process of the worker's prefix (the
	# agent and its runner child), then the server itself.
	[ -d "$wprefix" ] && WINEPREFIX=$wprefix timeout 20 wineserver -k 2>/dev/null || true
	for p in "${pids[@]}"; do
		timeout 10 tail --pid="$p" -f /dev/null 2>/dev/null || kill -9 "$p" 2>/dev/null || true
	done
	ip netns del "$nsh" 2>/dev/null || true
	ip netns del "$nsw" 2>/dev/null || true
	if [ $rc -ne 0 ]; then
		for f in "$tmp"/head.log "$tmp"/worker.log; do
			[ -f "$f" ] && { ringlog "--- $(basename "$f") (last 40 lines)"; tail -n 40 "$f" >&2; }
		done
	fi
	if [ -n "${HOMERING_WINE_RING_KEEP:-}" ]; then
		rm -rf "$wprefix"
		ringlog "kept the logs and config dirs in $tmp"
	else
		rm -rf "$tmp"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The head's and the worker's CLI, each in its namespace and config dir.
H() { ip netns exec "$nsh" env HOMERING_HOME="$tmp/head" timeout "${T:-60}" bin/homering "$@"; }
W() { ip netns exec "$nsw" env HOMERING_HOME="$tmp/worker" WINEPREFIX="$wprefix" timeout "${T:-60}" wine bin/homering.exe "$@"; }
json() { node -e "const v=JSON.parse(require('fs').readFileSync(0,'utf8'));console.log($1)"; }

# The network: two namespaces on one veth pair.
ip netns add "$nsh"
ip netns add "$nsw"
ip link add lan0 netns "$nsh" type veth peer name lan0 netns "$nsw"
ip -n "$nsh" addr add $head_ip/24 dev lan0
ip -n "$nsw" addr add $worker_ip/24 dev lan0
for n in "$nsh" "$nsw"; do
	ip -n "$n" link set lo up
	ip -n "$n" link set lan0 up
done
ip -n "$nsh" route add default via $worker_ip
ip -n "$nsw" route add default via $head_ip

cp -a "$WINEPREFIX" "$wprefix"
bin/homering gen-model -layers 6 -type Q8_0 -o "$tmp/llama6.gguf" >/dev/null
for d in head worker; do
	mkdir -p "$tmp/$d"
	echo '{"context_tokens": 512}' >"$tmp/$d/settings.json"
done
H contribute on >/dev/null
W contribute on >/dev/null

# Both agents, each bounded: the whole script must end in well under that.
ip netns exec "$nsh" env HOMERING_HOME="$tmp/head" timeout 240 bin/homering headless >"$tmp/head.log" 2>&1 &
pids+=($!)
ip netns exec "$nsw" env HOMERING_HOME="$tmp/worker" WINEPREFIX="$wprefix" timeout 240 wine bin/homering.exe headless >"$tmp/worker.log" 2>&1 &
pids+=($!)
for d in head worker; do
	for i in $(seq 240); do
		[ -s "$tmp/$d/api.json" ] && break
		[ "$i" = 240 ] && { ringlog "FAIL: the $d agent wrote no api.json in 60 s"; exit 1; }
		sleep 0.25
	done
done
ringlog "both agents up after $(since "$t0")"
worker_id=$(W id | tr -d '\r')

prompt="Once upon a time"
chat() { T=150 H chat --json --temp 0 --seed 1 -m "$tmp/llama6.gguf" -n 48 "$@" "$prompt"; }
# The reference: the head alone, before any pairing.
t=$(date +%s.%N)
chat >"$tmp/one.txt" 2>"$tmp/one.err"
one_stats=$(tail -n1 "$tmp/one.err")
if [ "$(json 'v.ring?"ring":"alone"' <<<"$one_stats")" != alone ] || ! [ -s "$tmp/one.txt" ]; then
	ringlog "FAIL: the reference chat did not run on the head alone: $one_stats"
	exit 1
fi
ringlog "head alone: $(wc -c <"$tmp/one.txt") bytes, $(json 'v.completion_tokens' <<<"$one_stats") tokens in $(since "$t")"

# Discovery: mDNS, else by address. Under Wine 8.0 mDNS cannot work: Go's
# net package sets SIO_UDP_CONNRESET and SIO_UDP_NETRESET on every UDP socket
# (net/fd_windows.go) and Wine answers WSAEOPNOTSUPP (10045), so the worker
# can neither advertise nor browse; its log says so, and then the head adds it
# by address at once. A Wine that opens the sockets gets 10 s to show the
# worker by mDNS.
t=$(date +%s.%N)
how=
end=$(($(date +%s) + 10))
while [ "$(date +%s)" -lt "$end" ]; do
	if H peers -json | json "v.peers.some(p=>p.id==='$worker_id'&&p.sources.includes('mdns'))" | grep -q true; then
		how=mDNS
		break
	fi
	if grep -q 'zeroconf.*no suitable IPv4 interface' "$tmp/worker.log"; then
		how="by address: the worker's mDNS failed under Wine ($(grep -m1 -o 'no suitable IPv4 interface.*' "$tmp/worker.log" | tr -d '\r'))"
		break
	fi
	sleep 0.25
done
if [ "$how" != mDNS ]; then
	how=${how:-"by address (no mDNS sighting in 10 s)"}
	H peers add "$worker_ip:47470" >/dev/null
fi
ringlog "head found the worker $how after $(since "$t")"

# Pairing by code: the worker shows one, the head enters it.
t=$(date +%s.%N)
code=$(W pair -no-wait -json | tr -d '\r' | json 'v.code')
# Added by address, the worker is known to contribute only once paired
# (app/node EnterCode): the chat below needs no further step.
H pair "$worker_ip" "$code" >/dev/null
ok=
for i in $(seq 120); do
	if H peers -json | json "v.peers.some(p=>p.id==='$worker_id'&&p.paired&&p.visible&&p.contribute)" | grep -q true; then
		ok=1
		break
	fi
	sleep 0.25
done
[ -n "$ok" ] || { ringlog "FAIL: the head does not see the worker paired, visible and contributing after 30 s:"; H peers >&2; exit 1; }
ringlog "paired by code in $(since "$t")"

# The ring: both devices, in one round (the worker holds one window) and in
# two (one window a round: activations cross the link four times a token).
rc=0
for k in 1 2; do
	t=$(date +%s.%N)
	chat --devices all --rounds $k >"$tmp/ring$k.txt" 2>"$tmp/ring$k.err" || { ringlog "FAIL: the ring chat (k=$k) failed:"; cat "$tmp/ring$k.err" >&2; exit 1; }
	ring_s=$(since "$t")
	ring_stats=$(tail -n1 "$tmp/ring$k.err")
	devices=$(json 'v.ring?v.ring.devices.length:0' <<<"$ring_stats")
	worker_windows=$(json "v.ring?JSON.stringify((v.ring.devices.find(d=>d.id==='$worker_id')||{}).windows||null):'null'" <<<"$ring_stats")
	if [ "$devices" != 2 ] || [ "$(json 'v.ring?v.ring.k:0' <<<"$ring_stats")" != $k ] || [ "$worker_windows" = null ] || [ "$worker_windows" = '[]' ]; then
		ringlog "FAIL: the chat did not run on a ring of the head and the Windows worker at k=$k: $ring_stats"
		rc=1
	fi
	if cmp -s "$tmp/one.txt" "$tmp/ring$k.txt"; then
		same="the same text as the head alone ($(wc -c <"$tmp/ring$k.txt") bytes)"
	else
		same="DIFFERENT text from the head alone"
		ringlog "FAIL: the ring's reply (k=$k) differs from the head alone's:"
		diff <(od -c "$tmp/one.txt") <(od -c "$tmp/ring$k.txt") >&2 || true
		rc=1
	fi
	ringlog "ring of $devices devices, k=$k (Linux head + Windows worker under Wine, worker windows $worker_windows): $same;" \
		"$(json 'v.completion_tokens' <<<"$ring_stats") tokens, TTFT $(json 'v.ttft_ms.toFixed(0)' <<<"$ring_stats") ms," \
		"TPOT $(json 'v.tpot_ms.toFixed(2)' <<<"$ring_stats") ms, chat $ring_s"
done
# The Windows side's engine (homering.exe's runner child under Wine) served it.
if ! grep -q 'msg="serving a ring job"' "$tmp/worker.log"; then
	ringlog "FAIL: the Windows worker's log has no ring job"
	rc=1
fi
ringlog "discovery $how; total $(since "$t0")"
exit $rc
