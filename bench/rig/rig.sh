# bench/rig/rig.sh: a test rig of N "devices" on one Linux machine, each a
# network namespace behind an emulated LAN link and a memory cgroup with a
# cap. Source it, then:
#
#   rig_up NAME N CAP_BYTES [DELAY JITTER RATE]   (defaults 5ms 1ms 300mbit)
#   bench/rig/enter "${RIG_NS[i]}" "${RIG_CG[i]}" CMD...   (i = 1..N)
#   rig_down                                       (also run by the EXIT trap rig_up sets)
#
# After rig_up: RIG_NS[i], RIG_ADDR[i] (IPv4 on 10.78.1.0/24), RIG_CG[i]
# (cgroup directory), RIG_CGV (1 or 2), RIG_LINK ("netem" or "linksim").
#
# Links: where the kernel has the netem qdisc, each device is a veth on a
# bridge (in its own namespace) with `tc netem delay D J rate R` on the
# device's end, as on a real LAN. Kernels without netem (this project's CI
# VMs) get bench/rig/linksim instead: a userspace switch with the same
# delay, jitter and rate per device uplink over TUN devices. Either way the
# round trip between two devices is 2 x DELAY.
#
# Memory: cgroup v1 (memory.limit_in_bytes; memory.memsw.limit_in_bytes too
# where swap accounting exists) or v2 (memory.max, memory.swap.max = 0). The
# cgroups are children of this shell's own memory cgroup on v1 (so whatever
# accounts for this shell still sees them); on v2 they are children of the
# root, where processes may live beside them.
#
# Names carry this shell's PID (hrring<PID>-...), so runs never collide;
# rig_up first removes what earlier runs whose PID is gone left behind (a
# SIGKILLed run cannot clean up). Needs root, ip (iproute2) and tc.

RIG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RIG_ROOT=$(cd "$RIG_DIR/../.." && pwd)
RIG_PREFIX=""
RIG_LINKSIM_PID=""
declare -a RIG_NS=() RIG_ADDR=() RIG_CG=()

rig_log() { printf 'rig: %s\n' "$*" >&2; }

# rig_cgroup_base prints the directory new memory cgroups go under and sets RIG_CGV.
rig_cgroup_base() {
	if [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ] || [ -f /sys/fs/cgroup/memory/cgroup.procs ]; then
		RIG_CGV=1
		local own
		own=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)
		echo "/sys/fs/cgroup/memory${own%/}"
	elif grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
		RIG_CGV=2
		echo /sys/fs/cgroup
	else
		rig_log "no memory cgroup controller found (neither /sys/fs/cgroup/memory nor cgroup2 with memory)"
		return 1
	fi
}

# rig_cg_kill DIR: SIGKILLs the processes in cgroup DIR (ones a rig started) and removes it.
rig_cg_kill() {
	local d=$1 pid tries
	[ -d "$d" ] || return 0
	for tries in 1 2 3 4 5 6 7 8 9 10; do
		local pids
		pids=$(cat "$d/cgroup.procs" 2>/dev/null || true)
		[ -n "$pids" ] || break
		for pid in $pids; do kill -KILL "$pid" 2>/dev/null || true; done
		sleep 0.2
	done
	rmdir "$d" 2>/dev/null || rig_log "could not remove cgroup $d"
}

# rig_clean_stale removes namespaces and cgroups of earlier runs whose shell is gone.
rig_clean_stale() {
	local base ns pid d
	base=$(rig_cgroup_base) || return 1
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^hrring[0-9]*-' || true); do
		pid=${ns#hrring}
		pid=${pid%%-*}
		if ! kill -0 "$pid" 2>/dev/null; then
			rig_log "removing stale namespace $ns"
			ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
			ip netns del "$ns" 2>/dev/null || true
		fi
	done
	for d in "$base"/hrring[0-9]*-*; do
		[ -d "$d" ] || continue
		pid=${d##*/hrring}
		pid=${pid%%-*}
		if ! kill -0 "$pid" 2>/dev/null; then
			rig_log "removing stale cgroup $d"
			rig_cg_kill "$d"
		fi
	done
}

rig_netem_works() {
	local probe="hrring$$-probe" ok=1
	ip netns add "$probe" || return 1
	ip -n "$probe" link set lo up
	ip netns exec "$probe" tc qdisc add dev lo root netem delay 1ms 2>/dev/null && ok=0
	ip netns del "$probe"
	return $ok
}

rig_up() {
	local name=$1 n=$2 cap=$3 delay=${4:-5ms} jitter=${5:-1ms} rate=${6:-300mbit}
	[ "$(id -u)" = 0 ] || { rig_log "needs root (network namespaces, cgroups)"; return 1; }
	command -v ip >/dev/null && command -v tc >/dev/null || { rig_log "needs ip and tc (Debian package iproute2)"; return 1; }
	rig_clean_stale
	RIG_PREFIX="hrring$$-$name"
	trap rig_down EXIT
	trap 'exit 130' INT TERM
	local base i
	base=$(rig_cgroup_base) || return 1
	rig_cgroup_base >/dev/null # sets RIG_CGV in this shell
	for ((i = 1; i <= n; i++)); do
		RIG_NS[i]="$RIG_PREFIX-d$i"
		RIG_ADDR[i]="10.78.1.$i"
		RIG_CG[i]="$base/$RIG_PREFIX-d$i"
		ip netns add "${RIG_NS[i]}"
		ip -n "${RIG_NS[i]}" link set lo up
		mkdir "${RIG_CG[i]}"
		if [ "$RIG_CGV" = 1 ]; then
			echo "$cap" >"${RIG_CG[i]}/memory.limit_in_bytes"
			if [ -f "${RIG_CG[i]}/memory.memsw.limit_in_bytes" ]; then
				echo "$cap" >"${RIG_CG[i]}/memory.memsw.limit_in_bytes" # no swapping around the cap
			fi
		else
			grep -qw memory /sys/fs/cgroup/cgroup.subtree_control || echo +memory >/sys/fs/cgroup/cgroup.subtree_control
			echo "$cap" >"${RIG_CG[i]}/memory.max"
			[ -f "${RIG_CG[i]}/memory.swap.max" ] && echo 0 >"${RIG_CG[i]}/memory.swap.max"
		fi
	done
	if rig_netem_works; then
		RIG_LINK=netem
		local br="$RIG_PREFIX-br"
		RIG_NS[0]=$br
		ip netns add "$br"
		ip -n "$br" link set lo up
		ip -n "$br" link add br0 type bridge
		ip -n "$br" link set br0 up
		for ((i = 1; i <= n; i++)); do
			local host="hr$$v$i"
			ip link add "$host" type veth peer name lan0 netns "${RIG_NS[i]}"
			ip link set "$host" netns "$br"
			ip -n "$br" link set "$host" master br0 up
			ip -n "${RIG_NS[i]}" addr add "${RIG_ADDR[i]}/24" dev lan0
			ip -n "${RIG_NS[i]}" link set lan0 up
			ip -n "${RIG_NS[i]}" route add 224.0.0.0/4 dev lan0
			ip netns exec "${RIG_NS[i]}" tc qdisc add dev lan0 root netem delay "$delay" "$jitter" rate "$rate"
		done
	else
		RIG_LINK=linksim
		local args=() out
		for ((i = 1; i <= n; i++)); do args+=("${RIG_NS[i]}=${RIG_ADDR[i]}"); done
		mkdir -p "$RIG_ROOT/bench/out"
		(cd "$RIG_ROOT" && . build/env.sh && go build -o bench/out/linksim ./bench/rig/linksim)
		out="$RIG_ROOT/bench/out/linksim-$$.log"
		"$RIG_ROOT/bench/out/linksim" -delay "$delay" -jitter "$jitter" -rate "$rate" "${args[@]}" >"$out" 2>&1 &
		RIG_LINKSIM_PID=$!
		local t
		for t in $(seq 100); do
			grep -q '^ready' "$out" 2>/dev/null && break
			kill -0 "$RIG_LINKSIM_PID" 2>/dev/null || { rig_log "linksim failed: $(cat "$out")"; return 1; }
			sleep 0.1
		done
		grep -q '^ready' "$out" || { rig_log "linksim not ready after 10 s: $(cat "$out")"; return 1; }
	fi
	rig_log "up: $n devices ${RIG_ADDR[*]:1} in namespaces $RIG_PREFIX-d1..d$n; link $RIG_LINK delay $delay ± $jitter, $rate per device uplink;"
	rig_log "    memory cgroup v$RIG_CGV caps $((cap / 1048576)) MiB each under ${base}/$RIG_PREFIX-d*"
}

rig_down() {
	local i
	[ -n "$RIG_PREFIX" ] || return 0
	for ((i = ${#RIG_NS[@]}; i >= 1; i--)); do
		[ -n "${RIG_CG[i]:-}" ] && rig_cg_kill "${RIG_CG[i]}"
	done
	if [ -n "$RIG_LINKSIM_PID" ]; then
		kill "$RIG_LINKSIM_PID" 2>/dev/null || true
		wait "$RIG_LINKSIM_PID" 2>/dev/null || true
		rm -f "$RIG_ROOT/bench/out/linksim-$$.log"
	fi
	for i in "${!RIG_NS[@]}"; do
		ip netns pids "${RIG_NS[i]}" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
		ip netns del "${RIG_NS[i]}" 2>/dev/null || true
	done
	rig_log "down: removed $RIG_PREFIX-* (namespaces, cgroups${RIG_LINKSIM_PID:+, linksim})"
	RIG_PREFIX="" RIG_LINKSIM_PID=""
	RIG_NS=() RIG_ADDR=() RIG_CG=()
}
