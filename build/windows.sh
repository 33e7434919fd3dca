#!/usr/bin/env bash
# Cross-builds bin/homering.exe (windows/amd64, cgo with mingw-w64) and
# prepares a Wine prefix to run it. `bash build/windows.sh` builds;
# `bash build/windows.sh test` also runs the exe under Wine against the Linux
# build (build/test.sh does this); sourcing it gives the functions alone.
# Idempotent: what it builds outside the checkout lives in a cache directory
# keyed by its inputs, and Go's build cache keeps the mingw objects of ggml and
# llama.cpp (cold: 3 minutes on two idle cores, ~15 on loaded ones), so the
# cgo flags below must stay identical from run to run.
# Needs build/setup.sh first (Go modules, the C headers in $HOMERING_CINCLUDE).

homering_win_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$homering_win_root/build/env.sh"

HOMERING_WIN_CACHE=${HOMERING_WIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/homering/win}
# Debian's lp_solve source package, the only one we build for mingw; pinned
# so that the cache key below names exactly what was built.
homering_lpsolve_version=5.5.2.5-2
homering_lpsolve_orig_sha256=201a7c62b8b3360c884ee2a73ed7667e5716fc1e809755053b398c2f5b0cf28a
WIN_CC=x86_64-w64-mingw32-gcc-posix
WIN_CXX=x86_64-w64-mingw32-g++-posix

winlog() { printf 'windows: %s\n' "$*" >&2; }

# Packages: the mingw-w64 cross compilers (posix threads: llama.cpp uses
# std::thread), gendef & co., Wine to run the result, dpkg-dev for apt-get
# source, curl for the chat completion test.
homering_win_packages() {
	local p missing=()
	for p in gcc-mingw-w64-x86-64-posix g++-mingw-w64-x86-64-posix mingw-w64-tools wine64 wine dpkg-dev curl; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return
	winlog "installing Debian packages: ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# apt-get source needs deb-src lines; Debian's images ship only deb ones.
homering_win_debsrc() {
	if grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ || grep -qs '^deb-src' /etc/apt/sources.list; then
		return
	fi
	winlog "adding deb-src for bookworm (apt-get source lp-solve)"
	cat >/etc/apt/sources.list.d/homering-deb-src.sources <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	apt-get update -qq
}

# lpsolve55.dll + its import library and headers, from Debian's orig tarball
# (LGPL; a DLL keeps relinking simple). The file list and flags are those of
# the upstream lpsolve55/cgcc.bat; no .def file, so every lp_* symbol golp
# calls is exported. -static-libgcc: the DLL needs nothing beside it. The
# import library is named liblpsolve55.a, not .dll.a: ollama's cgo flags link
# with -static, under which ld looks for lib*.a alone.
homering_win_lpsolve_build() {
	local out=$1 src
	src=$(mktemp -d)
	(
		cd "$src"
		apt-get source --download-only "lp-solve=$homering_lpsolve_version" >/dev/null
		echo "$homering_lpsolve_orig_sha256  lp-solve_5.5.2.5.orig.tar.gz" | sha256sum -c --quiet
		tar xzf lp-solve_5.5.2.5.orig.tar.gz
		cd lp_solve_5.5/lpsolve55
		local files=(../lp_MDO.c ../shared/commonlib.c ../shared/mmio.c ../shared/myblas.c ../ini.c
			../colamd/colamd.c ../lp_rlp.c ../lp_crash.c ../bfp/bfp_LUSOL/lp_LUSOL.c
			../bfp/bfp_LUSOL/LUSOL/lusol.c ../lp_Hash.c ../lp_lib.c ../lp_wlp.c ../lp_matrix.c
			../lp_mipbb.c ../lp_MPS.c ../lp_params.c ../lp_presolve.c ../lp_price.c ../lp_pricePSE.c
			../lp_report.c ../lp_scale.c ../lp_simplex.c ../lp_SOS.c ../lp_utils.c ../yacc_read.c)
		mkdir -p "$out.tmp/lib" "$out.tmp/include"
		$WIN_CC -DINLINE=static -I.. -I../shared -I../bfp -I../bfp/bfp_LUSOL -I../bfp/bfp_LUSOL/LUSOL \
			-I../colamd -O2 -shared -s -static-libgcc -D_USRDLL -DWIN32 -DYY_NEVER_INTERACTIVE \
			-DPARSER_LP -DINVERSE_ACTIVE=INVERSE_LUSOL -DRoleIsExternalInvEngine "${files[@]}" \
			-o "$out.tmp/lib/lpsolve55.dll" -Wl,--out-implib,"$out.tmp/lib/liblpsolve55.a"
		cp ../*.h "$out.tmp/include/"
	)
	rm -rf "$src"
	mv "$out.tmp" "$out"
}

# The cache key is the version plus the text of the build function itself, so
# editing the recipe rebuilds and an unchanged one never does.
homering_win_lpsolve() {
	local key
	key=$( { echo "$homering_lpsolve_version $homering_lpsolve_orig_sha256 $WIN_CC"; declare -f homering_win_lpsolve_build; } | sha256sum | cut -c1-12)
	HOMERING_WIN_LPSOLVE=$HOMERING_WIN_CACHE/lpsolve-5.5.2.5-$key
	if [ ! -f "$HOMERING_WIN_LPSOLVE/lib/lpsolve55.dll" ]; then
		winlog "building lp_solve $homering_lpsolve_version for mingw (~20 s)"
		homering_win_debsrc
		rm -rf "$HOMERING_WIN_LPSOLVE" "$HOMERING_WIN_LPSOLVE.tmp"
		homering_win_lpsolve_build "$HOMERING_WIN_LPSOLVE"
	fi
	export HOMERING_WIN_LPSOLVE
}

# mingw does not search /usr/include (it would find glibc's headers there), but
# ollama's llama.cpp needs nlohmann/json and stb from Debian: a directory that
# holds only those two, as symlinks.
homering_win_cinclude() {
	HOMERING_WIN_CINCLUDE=$HOMERING_WIN_CACHE/cinclude
	mkdir -p "$HOMERING_WIN_CINCLUDE"
	ln -sfn /usr/include/nlohmann "$HOMERING_WIN_CINCLUDE/nlohmann"
	ln -sfn /usr/include/stb "$HOMERING_WIN_CINCLUDE/stb"
	export HOMERING_WIN_CINCLUDE
}

# The Go environment of a windows/amd64 cgo build. The same ISA flags as
# build/env.sh; every path is outside the checkout, so a fresh clone hits
# Go's build cache.
homering_win_goenv() {
	export GOOS=windows GOARCH=amd64 CGO_ENABLED=1 CC=$WIN_CC CXX=$WIN_CXX
	export CGO_CFLAGS="-O2 $HOMERING_ISA -I$HOMERING_WIN_LPSOLVE/include"
	export CGO_CXXFLAGS="-O2 $HOMERING_ISA"
	export CGO_CPPFLAGS="-I$HOMERING_CINCLUDE -I$HOMERING_WIN_CINCLUDE"
	export CGO_LDFLAGS="-L$HOMERING_WIN_LPSOLVE/lib"
}

# A Wine prefix for the tests: created headless (no Mono or Gecko: the CLI
# needs neither, and their installers would ask), with the ProcessPrng
# stand-in (build/wine-processprng.c) in its system32. Keyed by Wine's
# version, the stand-in's source and this recipe.
homering_win_prefix_build() {
	local prefix=$1
	WINEPREFIX=$prefix.tmp WINEDLLOVERRIDES="mscoree,mshtml=" wineboot -i >/dev/null 2>&1
	WINEPREFIX=$prefix.tmp wineserver -w
	$WIN_CC -shared -O2 -s -o "$prefix.tmp/drive_c/windows/system32/bcryptprimitives.dll" \
		"$homering_win_root/build/wine-processprng.c" -ladvapi32
	mv "$prefix.tmp" "$prefix"
}

homering_win_prefix() {
	local key
	key=$( { wine --version 2>/dev/null; cat "$homering_win_root/build/wine-processprng.c"; declare -f homering_win_prefix_build; } | sha256sum | cut -c1-12)
	WINEPREFIX=$HOMERING_WIN_CACHE/wineprefix-$key
	if [ ! -f "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" ]; then
		winlog "creating the Wine prefix $WINEPREFIX"
		rm -rf "$WINEPREFIX" "$WINEPREFIX.tmp"
		homering_win_prefix_build "$WINEPREFIX"
	fi
	# Quiet, and the stand-in DLL rather than any builtin of that name.
	export WINEPREFIX WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml=;bcryptprimitives=n"
}

homering_win_build() {
	homering_win_packages
	homering_win_lpsolve
	homering_win_cinclude
	winlog "building bin/homering.exe (a cold build compiles ggml and llama.cpp for mingw: minutes)"
	(
		cd "$homering_win_root"
		homering_win_goenv
		go build -o bin/homering.exe .
	)
	cp -f "$HOMERING_WIN_LPSOLVE/lib/lpsolve55.dll" "$homering_win_root/bin/lpsolve55.dll"
	homering_win_cpu_lib
}

# ggml's CPU variants as DLLs (build/gpu-lib.sh cpu-windows: ggml-cpu-x64,
# -haswell, -icelake.dll and libggml-base.dll, cached under a key of their
# inputs; ~2 min cold on two cores). HOMERING_WIN_CPU_DIR is their directory.
homering_win_cpu_lib() {
	HOMERING_WIN_CPU_DIR=$(bash "$homering_win_root/build/gpu-lib.sh" cpu-windows | tail -n 1)
	export HOMERING_WIN_CPU_DIR
}

# homering_win_headless HOME CMD...: starts an agent (CMD) with its config in
# HOME, waits for its api.json (60 s at most) and prints its URL.
homering_win_headless() {
	local home=$1 i
	shift
	mkdir -p "$home"
	HOMERING_HOME=$home "$@" >"$home.log" 2>&1 &
	echo $! >"$home.pid"
	for i in $(seq 240); do
		kill -0 "$(cat "$home.pid")" 2>/dev/null || break
		if [ -s "$home/api.json" ]; then
			node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).url)' "$home/api.json"
			return
		fi
		sleep 0.25
	done
	winlog "no api.json from $* (exited, or 60 s passed):"
	cat "$home.log" >&2
	return 1
}

# The reply's text, finish reason and token counts: what must not differ
# between the two builds (id and created do).
homering_win_chat() {
	curl -sS --max-time 120 "$1/v1/chat/completions" -H 'Content-Type: application/json' \
		-d '{"model":"stories260K","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":24,"temperature":0}' |
		node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const r=JSON.parse(s);const c=r.choices[0];
if(!c.message.content)throw new Error("empty reply: "+s);
console.log(JSON.stringify({text:c.message.content,finish:c.finish_reason,usage:r.usage}))})'
}

# homering_win_same ARGS...: `homering ARGS` prints the same stdout under
# Wine as on Linux, byte for byte, and both exit 0. No normalisation is
# needed: paths are printed as given, and nothing writes a CR into a pipe.
homering_win_same() {
	local out
	out=$(mktemp -d)
	if ! bin/homering "$@" >"$out/linux" 2>"$out/linux.err"; then
		winlog "FAIL on Linux: homering $*"
		cat "$out/linux.err" >&2
	elif ! wine bin/homering.exe "$@" >"$out/wine" 2>"$out/wine.err"; then
		winlog "FAIL under Wine: homering $*"
		cat "$out/wine.err" >&2
	elif ! [ -s "$out/linux" ] || ! cmp -s "$out/linux" "$out/wine"; then
		winlog "FAIL: homering $* differs from Linux:"
		diff "$out/linux" "$out/wine" >&2
	else
		winlog "same as Linux ($(wc -c <"$out/wine") bytes): homering $*"
		rm -rf "$out"
		return 0
	fi
	rm -rf "$out"
	return 1
}

# homering_win_test: go vet for windows/amd64; then the cross-built exe under
# Wine against the Linux build (bin/homering, from build/setup.sh): the same
# stdout for a greedy 64-token run, inspect and plan; the Windows, halda and
# engine Go tests under Wine; and the same chat completion from `headless`
# through its engine child (mapped weights, protocol pipe, job).
homering_win_test() {
	homering_win_lpsolve
	homering_win_cinclude
	homering_win_prefix
	cd "$homering_win_root"
	local model=../shared/models/stories260K.gguf tmp rc=0
	tmp=$(mktemp -d)
	# Every package vets for windows/amd64 with cgo. The Linux rigs
	# (app/apptest's network namespaces, bench's cgroups, fadvise and TUN
	# link emulator) carry a linux build tag and vet as their package doc.
	if ! (homering_win_goenv && go vet ./...); then
		winlog "FAIL: go vet for windows/amd64"
		rc=1
	fi
	homering_win_same run -m "$model" -n 64 --temp 0 "Once upon a time" || rc=1
	homering_win_same inspect "$model" || rc=1
	homering_win_same inspect "$model" --json || rc=1
	homering_win_same plan --devices halda/testdata/devices.json --model "$model" || rc=1
	homering_win_same plan --devices halda/testdata/devices.json --model "$model" --json || rc=1
	# The CPU variants (issues 16 and 22): homering.exe loads each variant
	# DLL this CPU runs (HOMERING_CPU forces it; a DLL that does not load is
	# a refusal and the run fails) and prints the Linux build's greedy text.
	# A variant this CPU lacks the instructions for (icelake's AVX-512 on an
	# AVX2-only CPU) is refused on Linux, with its own libraries; homering.exe
	# must refuse it with the same sentence rather than crash on it.
	homering_win_cpu_lib
	local v want got refusal linux_cpu_dir
	linux_cpu_dir=$(bash build/gpu-lib.sh cpu | tail -n 1)
	want=$(bin/homering run -m "$model" -n 64 --temp 0 "Once upon a time")
	for v in x64 haswell icelake; do
		refusal=$(HOMERING_CPU=$v HOMERING_CPU_DIR=$linux_cpu_dir bin/homering run -m "$model" -n 4 --temp 0 "Once" 2>&1 >/dev/null |
			grep -o "HOMERING_CPU=$v is refused: this CPU lacks instructions.*" || true)
		if [ -n "$refusal" ]; then
			if HOMERING_CPU=$v HOMERING_CPU_DIR=$(winepath -w "$HOMERING_WIN_CPU_DIR") \
				wine bin/homering.exe run -m "$model" -n 4 --temp 0 "Once" >/dev/null 2>"$tmp/cpu.err" ||
				! grep -qF "$refusal" "$tmp/cpu.err"; then
				winlog "FAIL: this CPU cannot run the $v variant and Linux says \"$refusal\"; homering.exe did not refuse it so:"
				cat "$tmp/cpu.err" >&2
				rc=1
			else
				winlog "refused like Linux on the $v variant DLL (this CPU lacks its instructions): homering run"
			fi
			continue
		fi
		if got=$(HOMERING_CPU=$v HOMERING_CPU_DIR=$(winepath -w "$HOMERING_WIN_CPU_DIR") \
			wine bin/homering.exe run -m "$model" -n 64 --temp 0 "Once upon a time" 2>"$tmp/cpu.err") &&
			[ -n "$want" ] && [ "$got" = "$want" ]; then
			winlog "same as Linux on the $v variant DLL: homering run"
		else
			winlog "FAIL: homering.exe on the $v variant DLL does not print the Linux build's text:"
			cat "$tmp/cpu.err" >&2
			diff <(echo "$want") <(echo "$got") >&2
			rc=1
		fi
	done
	# A variant the directory lacks is refused, in one sentence.
	if HOMERING_CPU=nosuch HOMERING_CPU_DIR=$(winepath -w "$HOMERING_WIN_CPU_DIR") \
		wine bin/homering.exe run -m "$model" -n 4 --temp 0 "Once" >/dev/null 2>"$tmp/nosuch.err" ||
		! grep -q "HOMERING_CPU=nosuch names no CPU variant" "$tmp/nosuch.err"; then
		winlog "FAIL: HOMERING_CPU=nosuch was not refused under Wine:"
		cat "$tmp/nosuch.err" >&2
		rc=1
	fi
	# The Windows code's own tests: engine/ggml's file view, prefetch and
	# release; engine/runner's protocol pipe and kill-on-close job. The
	# runner re-plans a lost ring with halda's lp_solve: the DLL through
	# WINEPATH (without it the test exe dies at load, status 53).
	if ! (homering_win_goenv && export WINEPATH="$(winepath -w "$HOMERING_WIN_LPSOLVE/lib")" &&
		go test -exec wine -count=1 -run '^TestWindows' -v ./engine/ggml ./engine/runner); then
		winlog "FAIL: the Windows tests of engine/ggml and engine/runner under Wine"
		rc=1
	fi
	# The profiler's short timings (its clock, the layer probe, a loopback
	# link's round trips) are finer than Go's clock under Wine; the agent's
	# background measurement stops without SIGTERM, removing its scratch
	# files; a GUI build's missing stderr sends the log to agent.log; one
	# agent lock per user (LockFileEx); the config under %AppData% and caches
	# under %LocalAppData%; the doctor's reading of the firewall's registry
	# (Wine has no firewall).
	# engine/profile and app link halda's lp_solve: the DLL through WINEPATH.
	if ! (homering_win_goenv && export WINEPATH="$(winepath -w "$HOMERING_WIN_LPSOLVE/lib")" &&
		go test -exec wine -count=1 -v ./engine/profile/sysinfo ./engine/profile ./app ./app/config \
			-run '^TestShortTiming|^TestProfileStopRemovesScratch$|^TestUsableStderr$|^TestOpenAgentLog$|^TestLockAgent$|^TestDirsPerOS$|^TestFirewall'); then
		winlog "FAIL: the profiler's and the agent's Windows tests under Wine"
		rc=1
	fi
	# Halda's tests (lp_solve's optimum against brute force, among others) on
	# the mingw lpsolve55.dll, found through WINEPATH. TestDeps runs `go`,
	# which Wine has not got.
	if ! (homering_win_goenv && export WINEPATH="$(winepath -w "$HOMERING_WIN_LPSOLVE/lib")" &&
		go test -exec wine -count=1 -skip '^TestDeps$' ./halda ./halda/lpsolve); then
		winlog "FAIL: halda's tests on the Windows lp_solve under Wine"
		rc=1
	fi
	# The engine's packages whose tests need neither signals, /proc nor temp
	# directories: Go 1.26's os.RemoveAll fails under Wine 8.0 ("unlinkat:
	# Invalid function"), which fails every t.TempDir cleanup. engine/head
	# checks the window engine against llama.cpp, both built by mingw.
	if ! (homering_win_goenv && go test -exec wine -count=1 ./engine/head ./engine/llama ./engine/sample ./engine/chat ./engine/ring/wire); then
		winlog "FAIL: the engine's tests under Wine"
		rc=1
	fi

	local lurl wurl lchat wchat
	if lurl=$(homering_win_headless "$tmp/home-linux" bin/homering headless --model "$model") &&
		wurl=$(homering_win_headless "$tmp/home-wine" wine bin/homering.exe headless --model "$model") &&
		lchat=$(homering_win_chat "$lurl") && wchat=$(homering_win_chat "$wurl"); then
		if [ "$lchat" = "$wchat" ]; then
			winlog "same chat completion from headless as Linux: $wchat"
		else
			winlog "FAIL: headless chat completion differs: Linux $lchat, Wine $wchat"
			rc=1
		fi
	else
		winlog "FAIL: headless under Wine did not answer a chat completion"
		cat "$tmp/home-wine.log" >&2 2>/dev/null || true
		rc=1
	fi
	local f
	for f in "$tmp"/home-*.pid; do
		[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	wineserver -w
	rm -rf "$tmp"
	return $rc
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	homering_win_build
	if [ "${1:-}" = test ]; then
		homering_win_test
	fi
fi
