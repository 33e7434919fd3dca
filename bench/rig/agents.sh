# bench/rig/agents.sh: Homering agents on a rig (bench/rig/rig.sh). Source it
# after rig.sh and rig_up, with these set:
#   root   the checkout (absolute)
#   out    a directory under it for the binary and the agents' logs
#   homes  a directory under it for the agents' config directories
# and "$root/$out/homering" built. Then:
#
#   rig_cli I ARGS...          homering ARGS with device I's config directory, in its namespace
#   rig_agents N SETTINGS A:B...  `homering headless` on devices 1..N (contribute on,
#                              settings.json SETTINGS, 1 engine thread, in their cgroups), then
#                              each pair A:B paired as a person does (B shows a code, A enters it);
#                              returns once device 1 sees its peers paired
#
# Agent logs go to $out/agent-dI.log. The agents live in the rig's cgroups,
# so rig_down ends them.

rig_cli() {
	local i=$1
	shift
	HOMERING_HOME=$root/$homes/d$i HOMERING_THREADS=1 nsenter --net="/var/run/netns/${RIG_NS[i]}" -- "$root/$out/homering" "$@"
}

rig_agents() {
	local n=$1 settings=$2 i
	shift 2
	for ((i = 1; i <= n; i++)); do
		mkdir -p "$homes/d$i"
		echo "$settings" >"$homes/d$i/settings.json"
		rig_cli "$i" contribute on >/dev/null
		HOMERING_HOME=$root/$homes/d$i HOMERING_THREADS=1 bench/rig/enter "${RIG_NS[i]}" "${RIG_CG[i]}" \
			"$root/$out/homering" headless --interface lan0 >"$out/agent-d$i.log" 2>&1 &
	done
	for ((i = 1; i <= n; i++)); do
		local t
		for t in $(seq 200); do
			rig_cli "$i" peers -json >/dev/null 2>&1 && break
			sleep 0.1 # poll interval
		done
		rig_cli "$i" peers -json >/dev/null || { echo "agent d$i did not start: $(tail -5 "$out/agent-d$i.log")"; return 1; }
	done
	local pair peers=0
	for pair in "$@"; do
		local a=${pair%:*} b=${pair#*:} code
		code=$(rig_cli "$b" pair -no-wait -json | sed -n 's/.*"code": *"\([0-9-]*\)".*/\1/p')
		rig_cli "$a" pair "${RIG_ADDR[b]}" "$code" >/dev/null || { echo "pairing d$a with d$b failed"; return 1; }
		[ "$a" = 1 ] && peers=$((peers + 1))
	done
	bench/out/ringbench wait-peers -n "$peers" -timeout 30s -- env HOMERING_HOME="$root/$homes/d1" \
		nsenter --net="/var/run/netns/${RIG_NS[1]}" -- "$root/$out/homering" peers -json || return 1
	echo "rig: agents up on ${RIG_ADDR[*]:1}; paired $*" >&2
}
