# shellcheck shell=bash
# Sourced by the benchmarks that run one process under a memory cgroup
# (bench/profile.sh, bench/moe.sh): v2 when the unified hierarchy has the
# memory controller, else v1; swap off where v2 allows it.
#
#   memcg_make NAME LIMIT_BYTES WHO   sets memcg (the group's directory)
#   memcg_run CMD...                  runs CMD inside it
#   memcg_cleanup                     moves what is left back, removes it
memcg=""
memcg_root=""

memcg_make() {
	local name=$1 limit=$2 who=$3
	if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
		memcg_root=/sys/fs/cgroup; memcg="$memcg_root/$name"; mkdir "$memcg"; echo "$limit" > "$memcg/memory.max"; echo 0 > "$memcg/memory.swap.max" 2>/dev/null || true
	elif [ -d /sys/fs/cgroup/memory ]; then
		memcg_root=/sys/fs/cgroup/memory; memcg="$memcg_root/$name"; mkdir "$memcg"; echo "$limit" > "$memcg/memory.limit_in_bytes"
	else
		echo "$who: no memory cgroup controller (v1 or v2) is mounted; cannot run the paging row." >&2
		return 1
	fi
}

memcg_run() {
	bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' _ "$memcg" "$@"
}

memcg_cleanup() {
	if [ -n "$memcg" ] && [ -d "$memcg" ]; then
		# Move anything left back to the root before removing the group.
		if [ -f "$memcg/cgroup.procs" ]; then
			while read -r pid; do echo "$pid" > "$memcg_root/cgroup.procs" 2>/dev/null || true; done < "$memcg/cgroup.procs"
		fi
		rmdir "$memcg" 2>/dev/null || true
	fi
}
