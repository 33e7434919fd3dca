#!/usr/bin/env bash
# build/test.sh's release section: shellcheck on build/*.sh, then
# build/release.sh all, then checks of what it made:
#   - lintian reports no errors on the .deb (its warnings are printed);
#   - `dpkg-deb -c` lists the expected files, and Depends has lp-solve and
#     dpkg-shlibdeps' libc6;
#   - no build-machine path in the binaries (RUNPATH and strings); the Linux
#     one is a baseline x86-64 build (few FMA/F16C/AVX2 instructions);
#   - the .deb's binary, extracted with dpkg-deb -x beside a stand-in for
#     lp-solve's directory, prints the version and the same greedy 64 tokens
#     as bin/homering; so does the tarball's; build/smoke.sh passes on it;
#   - both Linux binaries find ggml's CPU variants beside them, run the
#     x64 (baseline) and haswell ones when HOMERING_CPU forces them with the
#     same greedy text, and refuse a variant there is none of;
#   - the zip holds the exe, lp_solve's DLL and its license, and the CPU
#     variant DLLs (the installed exe's run loads the best of them);
#     homering.exe is a console program and homering-app.exe the same
#     linked for the GUI subsystem with the Wails window (their PE headers
#     and strings say so);
#   - under Wine, in a copy of build/windows.sh's prefix: `setup.exe /S`
#     exits 0, the installed homering.exe prints the version and the same
#     64 tokens, the Run key (to homering-app.exe), the Add/Remove Programs
#     key and the Start menu shortcut exist; `uninstall.exe /S` removes files, shortcut and keys.
#     The firewall rule cannot be checked: Wine's netsh is a stub.
#   - the zip's homering-app.exe runs the tray agent under Wine and Xvfb,
#     logging to agent.log (a GUI program has no stderr), and sets its icon
#     (an ICO) without systray's "unable to set icon";
#   - build/macos-app.sh's dry run assembles Homering.app's tree.
# Needs build/setup.sh and build/windows.sh (its DLL and Wine prefix).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
. build/env.sh
model=../shared/models/stories260K.gguf
prompt="Once upon a time"
rc=0
say() { printf 'release test: %s\n' "$*" >&2; }
fail() {
	say "FAIL: $*"
	rc=1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Every build script is free of shellcheck's errors; the release scripts of
# everything it reports.
shellcheck -x -S error build/*.sh || fail "shellcheck errors in build/*.sh"
shellcheck -x build/release.sh build/release-test.sh build/macos-app.sh || fail "shellcheck findings in the release scripts"
say "shellcheck: build/*.sh have no errors; the release scripts have no findings"

# One version for every artifact, even if HEAD moves meanwhile.
version=$(bash build/release.sh version)
export RELEASE_VERSION=$version
bash build/release.sh all
deb=dist/homering_${version//-/+}_amd64.deb
tgz=dist/homering-$version-linux-amd64.tar.gz
zip=dist/homering-$version-windows-amd64.zip
setup=dist/homering-$version-windows-amd64-setup.exe
for f in "$deb" "$tgz" "$zip" "$setup"; do
	[ -s "$f" ] || fail "release.sh made no $f"
done

bin/homering run -m "$model" -n 64 --temp 0 "$prompt" >"$tmp/want" 2>/dev/null
[ -s "$tmp/want" ] || fail "bin/homering run printed nothing"
# same LABEL CMD...: CMD's `version` and greedy run match bin/homering's.
same() {
	local label=$1 v
	shift
	v=$("$@" version 2>/dev/null | tr -d '\r')
	[ "$v" = "homering $version" ] || fail "$label: version printed '$v', want 'homering $version'"
	"$@" run -m "$model" -n 64 --temp 0 "$prompt" >"$tmp/got" 2>"$tmp/got.err" || {
		fail "$label: run exited non-zero"
		cat "$tmp/got.err" >&2
	}
	if cmp -s "$tmp/want" "$tmp/got"; then
		say "$label: '$v', the same $(wc -c <"$tmp/got") bytes as bin/homering run"
	else
		fail "$label: run differs from bin/homering's"
		diff "$tmp/want" "$tmp/got" >&2 || true
	fi
}

# The .deb.
lintian --tag-display-limit 0 "$deb" >"$tmp/lintian" 2>&1 || true
if grep -q '^E:' "$tmp/lintian"; then
	fail "lintian errors:"
	grep '^E:' "$tmp/lintian" >&2
fi
say "lintian: $(grep -c '^E:' "$tmp/lintian") errors, $(grep -c '^W:' "$tmp/lintian") warnings:"
grep '^W:' "$tmp/lintian" >&2 || true
dpkg-deb -c "$deb" | awk '{print $6, $7, $8}' | sed 's/ *$//' | sort >"$tmp/contents"
for f in ./usr/bin/homering "./usr/lib/homering/liblpsolve55.so -> ../lp_solve/liblpsolve55.so" \
	./usr/share/applications/homering.desktop ./etc/xdg/autostart/homering.desktop \
	./usr/share/icons/hicolor/scalable/apps/homering.svg ./usr/share/doc/homering/copyright \
	./usr/share/doc/homering/changelog.gz; do
	grep -qxF "$f" "$tmp/contents" || fail "the .deb lacks $f"
done
depends=$(dpkg-deb -f "$deb" Depends)
case $depends in *libc6*lp-solve) ;; *) fail "Depends '$depends' lacks libc6 or lp-solve" ;; esac
say "the .deb holds $(grep -c . "$tmp/contents") entries; Depends: $depends"
mkdir -p "$tmp/deb/usr/lib"
dpkg-deb -x "$deb" "$tmp/deb"
# lp-solve's directory, as the dependency would install it.
ln -s /usr/lib/lp_solve "$tmp/deb/usr/lib/lp_solve"
runpath=$(readelf -d "$tmp/deb/usr/bin/homering" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
# shellcheck disable=SC2016 # a literal $ORIGIN
[ "$runpath" = '$ORIGIN/../lib/homering' ] || fail "the .deb's RUNPATH is '$runpath'"
n=$(strings -a "$tmp/deb/usr/bin/homering" | grep -c -E "/root/|$HOME/|$root" || true)
[ "$n" = 0 ] || fail "$n strings of the .deb's binary name build-machine paths"
say "the .deb's binary: RUNPATH $runpath, no /root/, \$HOME or checkout path in its strings"
# Baseline x86-64 (RELEASE_ISA=portable): ggml's kernels without FMA, F16C or
# AVX2 dot products. An x86-64-v3 build has ~1800 of these in ggml alone;
# some remain in code that checks the CPU first: a few in ggml's, and ~1050 in
# engine/ggml/gemm.c's prompt and token-step kernels (compiled for AVX2 and
# AVX-512 by target pragmas, run only under an AVX2 CPU variant: 1068 at
# 1c785f4). A v3 build would have ~1800 more than that.
if [ "${RELEASE_ISA:-portable}" = portable ]; then
	n=$(objdump -d --no-show-raw-insn "$tmp/deb/usr/bin/homering" | grep -c -E 'vfmadd|vpmaddubsw|vcvtph2ps' || true)
	[ "$n" -lt 1500 ] || fail "the .deb's binary has $n FMA/F16C/AVX2 instructions: not a baseline x86-64 build"
	say "the .deb's binary is baseline x86-64: $n FMA/F16C/AVX2 instructions"
fi
same "the .deb's binary" "$tmp/deb/usr/bin/homering"
# The smoke test the release workflow runs on Windows, here on the .deb's binary.
bash build/smoke.sh "$tmp/deb/usr/bin/homering" "$tmp/smoke" >/dev/null || fail "build/smoke.sh on the .deb's binary"
mkdir -p "$tmp/tgz"
tar -xzf "$tgz" -C "$tmp/tgz"
same "the tarball's binary" "$tmp/tgz/homering-$version-linux-amd64/homering"

# ggml's CPU variants beside both Linux binaries (issues 16 and 22): each
# loads the one HOMERING_CPU forces (a library that does not load is a
# refusal, and run fails) and prints the same greedy text, the baseline x64
# included: the portable path runs; a variant the directory lacks is refused
# with the list of those it holds (the binary found them).
ggml_dir=ollama-$(go list -m -f '{{.Version}}' github.com/ollama/ollama)
for d in "$tmp/deb/usr/lib/homering/cpu/$ggml_dir" "$tmp/tgz/homering-$version-linux-amd64/lib/homering-cpu/$ggml_dir"; do
	for f in libggml-base.so.0 libggml-cpu-x64.so libggml-cpu-haswell.so libggml-cpu-icelake.so homering-ggml.txt; do
		[ -f "$d/$f" ] || fail "no ${d#"$tmp"/}/$f"
	done
done
same "the .deb's binary on the x64 variant" env HOMERING_CPU=x64 "$tmp/deb/usr/bin/homering"
same "the tarball's binary on the haswell variant" env HOMERING_CPU=haswell "$tmp/tgz/homering-$version-linux-amd64/homering"
if env HOMERING_CPU=nosuch "$tmp/deb/usr/bin/homering" run -m "$model" -n 2 "$prompt" >/dev/null 2>"$tmp/nosuch" ||
	! grep -q "HOMERING_CPU=nosuch names no CPU variant in .* (it holds haswell, icelake, x64)" "$tmp/nosuch"; then
	fail "HOMERING_CPU=nosuch was not refused by the .deb's binary:"
	cat "$tmp/nosuch" >&2
else
	say "the .deb's binary refuses HOMERING_CPU=nosuch: $(tail -n 1 "$tmp/nosuch")"
fi

# The zip.
unzip -Z1 "$zip" | sort >"$tmp/zip"
for f in homering.exe homering-app.exe lpsolve55.dll lpsolve55-LICENSE.txt lpsolve55-SOURCE.txt \
	"lib/homering-cpu/$ggml_dir/"{libggml-base,ggml-cpu-x64,ggml-cpu-haswell,ggml-cpu-icelake}.dll; do
	grep -qxF "homering-$version-windows-amd64/$f" "$tmp/zip" || fail "the zip lacks $f"
done

# pe_subsystem EXE: the Subsystem field of a PE32+ image (2 GUI, 3 console):
# at the optional header's offset 68, after the 4-byte signature and the
# 20-byte file header that e_lfanew (offset 0x3c) points at.
pe_subsystem() {
	local lfanew
	lfanew=$(od -An -tu4 -j60 -N4 "$1" | tr -d ' ')
	od -An -tu2 -j$((lfanew + 4 + 20 + 68)) -N2 "$1" | tr -d ' '
}
unzip -q "$zip" -d "$tmp/zipx"
zdir=$tmp/zipx/homering-$version-windows-amd64
if [ "$(pe_subsystem "$zdir/homering.exe")" != 3 ] || [ "$(pe_subsystem "$zdir/homering-app.exe")" != 2 ]; then
	fail "PE subsystems: homering.exe $(pe_subsystem "$zdir/homering.exe"), homering-app.exe $(pe_subsystem "$zdir/homering-app.exe"); want 3 (console) and 2 (GUI)"
else
	say "homering.exe is a console program, homering-app.exe a GUI one (PE subsystems 3 and 2)"
fi
# The app exe has the Wails window (WebView2), the CLI none.
# (grep -c reads all: grep -q would end the pipe early, and pipefail fail it)
if [ "$(strings -a "$zdir/homering-app.exe" | grep -c WebView2)" = 0 ] || [ "$(strings -a "$zdir/homering.exe" | grep -c WebView2)" != 0 ]; then
	fail "homering-app.exe should carry the WebView2 window and homering.exe not"
else
	say "homering-app.exe carries the WebView2 window"
fi

# The installer under Wine, in a throwaway copy of the test prefix.
. build/windows.sh
homering_win_prefix
cp -a "$WINEPREFIX" "$tmp/wine"
export WINEPREFIX=$tmp/wine
run_key='HKLM\Software\Microsoft\Windows\CurrentVersion\Run'
arp_key='HKLM\Software\Microsoft\Windows\CurrentVersion\Uninstall\Homering'
dir="$WINEPREFIX/drive_c/Program Files/Homering"
lnk="$WINEPREFIX/drive_c/ProgramData/Microsoft/Windows/Start Menu/Programs/Homering.lnk"
if wine "$setup" /S; then
	wineserver -w
	say "setup.exe /S exited 0; installed: $(cd "$dir" && echo *)"
else
	fail "setup.exe /S exited non-zero"
fi
same "the installed homering.exe" wine "$dir/homering.exe"
[ -f "$dir/homering-app.exe" ] || fail "the installer did not install homering-app.exe"
wine reg query "$run_key" /v Homering 2>/dev/null | grep -qF '"C:\Program Files\Homering\homering-app.exe"' ||
	fail "no Run key for start at login"
wine reg query "$arp_key" /v UninstallString >/dev/null 2>&1 || fail "no Add/Remove Programs entry"
[ -f "$lnk" ] || fail "no Start menu shortcut"
# The uninstaller copies itself to %TEMP% and runs from there: wait for it.
wine "$dir/uninstall.exe" /S || fail "uninstall.exe /S exited non-zero"
wineserver -w
[ ! -e "$dir" ] || fail "the uninstaller left $(ls "$dir")"
[ ! -e "$lnk" ] || fail "the uninstaller left the shortcut"
! wine reg query "$run_key" /v Homering >/dev/null 2>&1 || fail "the uninstaller left the Run key"
! wine reg query "$arp_key" >/dev/null 2>&1 || fail "the uninstaller left the Add/Remove Programs entry"
say "installer: Run key, Add/Remove Programs entry and shortcut made, and removed with the files by uninstall.exe /S (firewall rule: unchecked, Wine's netsh is a stub)"

# The tray under Wine and Xvfb: Windows' tray loads only ICO (app/tray wraps
# the PNG); a bare PNG made systray log "unable to set icon".
# A wineserver started without a display cannot make the tray's window.
wineserver -k 2>/dev/null || true
wineserver -w
HOMERING_HOME=$tmp/trayhome xvfb-run -a timeout 12 wine "$zdir/homering-app.exe" \
	tray --model "$model" >"$tmp/tray.log" 2>&1 || true
wineserver -k 2>/dev/null || true
if ! grep -q "tray ready" "$tmp/trayhome/agent.log" 2>/dev/null; then
	fail "the tray under Wine did not get ready"
	cat "$tmp/tray.log" "$tmp/trayhome/agent.log" >&2 2>/dev/null || true
elif grep -i "unable to set icon" "$tmp/tray.log" >&2; then
	fail "the Windows tray could not set its icon"
else
	say "the tray under Wine: ready, its icon set"
fi

# The macOS recipe, dry: the bundle's tree and plists, nothing Apple's.
bash build/macos-app.sh --dry-run "$tmp/mac" >/dev/null || fail "build/macos-app.sh --dry-run failed"
for f in Homering.app/Contents/Info.plist Homering.app/Contents/MacOS/homering \
	Homering.app/Contents/Frameworks/liblpsolve55.dylib Homering.app/Contents/Resources/homering.icns \
	Homering.app/Contents/Library/LaunchAgents/com.homering.agent.plist; do
	[ -e "$tmp/mac/$f" ] || fail "the dry-run bundle lacks $f"
done
grep -q '<key>LSUIElement</key>' "$tmp/mac/Homering.app/Contents/Info.plist" || fail "Info.plist lacks LSUIElement"

[ $rc = 0 ] && say "all release checks passed"
exit $rc
