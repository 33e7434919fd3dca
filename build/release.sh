#!/usr/bin/env bash
# Builds the release artifacts into dist/ (git-ignored):
#   homering-VERSION-linux-amd64.tar.gz   the binary, for a system with lp-solve
#   homering_DEBVERSION_amd64.deb         /usr/bin/homering, desktop entry, icon, XDG autostart
#   homering-VERSION-windows-amd64.zip    homering.exe (CLI), homering-app.exe (the same
#                                         linked -H windowsgui: tray, no console) +
#                                         lpsolve55.dll (LGPL, with its license)
#   homering-VERSION-windows-amd64-setup.exe  the NSIS installer (build/homering.nsi)
# Usage: build/release.sh [all|linux|windows|version]   (default all; version
# prints the version the artifacts are named by)
# VERSION is `git describe --tags` without its leading v, or 0.0.0-<short hash>
# with no tag (RELEASE_VERSION overrides it); the .deb's version is the same
# with '-' spelled '+' (a native package). Both binaries are built with -trimpath and -s -w; the Linux one is
# the desktop build (build/build-desktop.sh's tags: tray + window) and its
# RUNPATH is rewritten with patchelf (golp's cgo line puts the Go module
# cache's lpsolve directory there). The script fails if a build-machine path
# (the module cache, GOROOT, this checkout, $HOME) is left in a binary.
# The ISA is baseline x86-64 (RELEASE_ISA=native: build/env.sh's x86-64-v3);
# beside the binary ship ggml's CPU backend variants (build/gpu-lib.sh cpu and
# cpu-windows: x64, haswell = AVX2/FMA, icelake = AVX-512 VNNI), of which the
# binary loads the best this CPU runs at start (engine/runner's LoadCPU;
# HOMERING_CPU forces one): lib/homering-cpu/ollama-<ggml version>/ in the
# tarball and the zip (and the installer's directory), /usr/lib/homering/cpu/…
# in the .deb.
# Needs build/setup.sh first; the Windows half reuses build/windows.sh's
# lp_solve DLL and cgo environment. Debian packages: build/apt-extra.txt.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# Release binaries run on any x86-64 CPU: the baseline ISA (build/env.sh's
# HOMERING_PORTABLE); RELEASE_ISA=native keeps this machine's (x86-64-v3).
if [ "${RELEASE_ISA:-portable}" = portable ]; then
	export HOMERING_PORTABLE=1
fi
. build/env.sh

rellog() { printf 'release: %s\n' "$*" >&2; }

what=${1:-all}
case $what in all | linux | windows | version) ;; *)
	echo "usage: build/release.sh [all|linux|windows|version]" >&2
	exit 2
	;;
esac

if [ -n "${RELEASE_VERSION:-}" ]; then
	version=$RELEASE_VERSION
elif v=$(git describe --tags 2>/dev/null); then
	version=${v#v}
else
	version=0.0.0-$(git rev-parse --short HEAD)
fi
deb_version=${version//-/+}
if [ "$what" = version ]; then
	echo "$version"
	exit 0
fi
dist=$root/dist
mkdir -p "$dist"
# dist/ holds one version: an older one's artifacts go.
find "$dist" -maxdepth 1 -name 'homering[-_]*' ! -name "homering-$version-*" ! -name "homering_${deb_version}_*" -delete
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Reproducible archives: every file dated by the commit.
epoch=$(git log -1 --format=%ct HEAD)
export SOURCE_DATE_EPOCH=$epoch
goldflags="-s -w -X homering/app.Version=$version"

# rel_no_build_paths FILE: no path of this build machine in FILE's strings.
rel_no_build_paths() {
	local pat n
	pat="$(go env GOMODCACHE)|$(go env GOROOT)|$root|$HOME/"
	n=$(strings -a "$1" | grep -c -E "$pat" || true)
	if [ "$n" != 0 ]; then
		rellog "FAIL: $n strings of $1 name this machine's paths, e.g.:"
		strings -a "$1" | grep -E "$pat" | head -5 >&2
		return 1
	fi
}

# shellcheck disable=SC2059 # the formats are octal escapes of the bytes
# rel_ico PNG ICO: a one-entry ICO holding the PNG as is (Windows Vista and
# later read PNG-compressed icon entries).
rel_ico() {
	local size w h
	size=$(stat -c %s "$1")
	w=$(od -An -tu1 -j19 -N1 "$1" | tr -d ' ')
	h=$(od -An -tu1 -j23 -N1 "$1" | tr -d ' ')
	[ "$w" -ge 256 ] && w=0
	[ "$h" -ge 256 ] && h=0
	{
		printf '\0\0\1\0\1\0'
		printf "\\$(printf %03o "$w")\\$(printf %03o "$h")\\0\\0\\1\\0\\40\\0"
		printf "\\$(printf %03o $((size & 255)))\\$(printf %03o $((size >> 8 & 255)))\\$(printf %03o $((size >> 16 & 255)))\\0"
		printf '\26\0\0\0'
		cat "$1"
	} >"$2"
}

# The app's icon at 256x256: the web UI's favicon (frontend/public/favicon.svg,
# a 32-unit viewBox) scaled 8x and drawn with ImageMagick's primitives
# (Debian's ImageMagick has no SVG reader without a delegate).
rel_icon_png() {
	convert -size 256x256 xc:none -fill none -stroke '#3a6ea5' -strokewidth 32 \
		-draw 'circle 128,128 128,40' -stroke none -fill '#e09a3e' -draw 'circle 128,40 128,12' -define png:exclude-chunks=date,time "png32:$1"
}

# The directory name of the CPU variants: the ggml version the binary is
# built from (engine/runner's CPUDirs).
ggml_dir=ollama-$(go list -m -f '{{.Version}}' github.com/ollama/ollama)

# rel_cpu_libs MODE DEST: the CPU variant libraries (build/gpu-lib.sh MODE:
# cpu or cpu-windows), their base library and the stamp, into DEST; Linux's
# stripped, the base library under its soname (the variants' DT_NEEDED), each
# free of build-machine paths.
rel_cpu_libs() {
	local src f
	src=$(bash build/gpu-lib.sh "$1" | tail -n 1)
	mkdir -p "$2"
	cp "$src/homering-ggml.txt" "$2/"
	if [ "$1" = cpu ]; then
		cp -L "$src/libggml-base.so.0" "$src"/libggml-cpu-*.so "$2/"
		strip --strip-unneeded "$2"/*.so*
	else
		cp "$src"/*.dll "$2/"
	fi
	for f in "$2"/*ggml*; do
		rel_no_build_paths "$f"
	done
	chmod 0644 "$2"/*
}

rel_linux() {
	local bin=$work/linux/homering stage deb pkg
	rellog "building the Linux binary $version (desktop build, -trimpath)"
	mkdir -p "$work/linux"
	# -trimpath does not reach C's __FILE__: miniaudio's asserts would name
	# the header directory of build/env.sh.
	CGO_CPPFLAGS="$CGO_CPPFLAGS -ffile-prefix-map=$HOMERING_CINCLUDE=/homering-cinclude" \
		go build -trimpath -tags desktop,production,webkit2_41 -ldflags "$goldflags" -o "$bin" .
	# RUNPATH: the .deb finds liblpsolve55.so through /usr/lib/homering (a
	# symlink to lp-solve's /usr/lib/lp_solve, which is off the linker's path);
	# the tarball's binary looks in lp-solve's directory itself.
	cp "$bin" "$work/linux/homering-tar"
	# shellcheck disable=SC2016 # a literal $ORIGIN
	patchelf --set-rpath '$ORIGIN/../lib/homering' "$bin"
	patchelf --set-rpath /usr/lib/lp_solve "$work/linux/homering-tar"
	rel_no_build_paths "$bin"
	rel_no_build_paths "$work/linux/homering-tar"

	pkg=homering-$version-linux-amd64
	mkdir -p "$work/tar/$pkg"
	install -m 0755 "$work/linux/homering-tar" "$work/tar/$pkg/homering"
	rel_cpu_libs cpu "$work/tar/$pkg/lib/homering-cpu/$ggml_dir"
	cat >"$work/tar/$pkg/README.txt" <<EOF
Homering $version for Linux (amd64).
Needs lp_solve (Debian/Ubuntu: apt-get install lp-solve) and GTK 3 + WebKitGTK 4.1
(libgtk-3-0 libwebkit2gtk-4.1-0). Run ./homering for the tray agent, ./homering help for the rest.
The .deb installs the same binary with a desktop entry and start at login.
EOF
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
		-C "$work/tar" -czf "$dist/$pkg.tar.gz" "$pkg"
	rellog "built dist/$pkg.tar.gz"

	stage=$work/deb
	install -D -m 0755 "$bin" "$stage/usr/bin/homering"
	mkdir -p "$stage/usr/lib/homering"
	ln -s ../lp_solve/liblpsolve55.so "$stage/usr/lib/homering/liblpsolve55.so"
	rel_cpu_libs cpu "$stage/usr/lib/homering/cpu/$ggml_dir"
	install -D -m 0644 build/release/homering.desktop "$stage/usr/share/applications/homering.desktop"
	install -D -m 0644 build/release/homering.desktop "$stage/etc/xdg/autostart/homering.desktop"
	install -D -m 0644 frontend/public/favicon.svg "$stage/usr/share/icons/hicolor/scalable/apps/homering.svg"
	install -D -m 0644 build/release/copyright "$stage/usr/share/doc/homering/copyright"
	# The changelog of a native package: one entry for this build.
	printf 'homering (%s) unstable; urgency=medium\n\n  * Release %s, built from git %s.\n\n -- %s  %s\n' \
		"$deb_version" "$version" "$(git rev-parse --short HEAD)" "$(rel_maintainer)" \
		"$(date -R -u -d "@$epoch")" | gzip -9n >"$work/changelog.gz"
	install -D -m 0644 "$work/changelog.gz" "$stage/usr/share/doc/homering/changelog.gz"

	# Depends: dpkg-shlibdeps on the binary (it wants a debian/control), plus
	# lp-solve, whose library has no shlibs entry (its name is unversioned).
	local depends
	mkdir -p "$work/shlibs/debian"
	printf 'Source: homering\n\nPackage: homering\nArchitecture: amd64\n' >"$work/shlibs/debian/control"
	local f shl=(-e "$stage/usr/bin/homering")
	for f in "$stage/usr/lib/homering/cpu/$ggml_dir/"*.so*; do
		shl+=(-e "$f")
	done
	depends=$(cd "$work/shlibs" && dpkg-shlibdeps -O --ignore-missing-info -l/usr/lib/lp_solve \
		-l"$stage/usr/lib/homering/cpu/$ggml_dir" "${shl[@]}" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
	[ -n "$depends" ] || { rellog "FAIL: dpkg-shlibdeps found no dependencies"; return 1; }
	mkdir -p "$stage/DEBIAN"
	cat >"$stage/DEBIAN/control" <<EOF
Package: homering
Version: $deb_version
Architecture: amd64
Maintainer: $(rel_maintainer)
Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)
Depends: $depends, lp-solve
Section: net
Priority: optional
Description: run one large language model on the computers of a home
 Homering runs on every laptop and desktop in a home, and together they run
 one large language model that none of them could hold alone. Nothing leaves
 the house. It starts at login with a tray icon; "homering help" lists the
 command-line tools.
EOF
	echo /etc/xdg/autostart/homering.desktop >"$stage/DEBIAN/conffiles"
	(cd "$stage" && find usr etc -type f -print0 | sort -z | xargs -0 md5sum >DEBIAN/md5sums)
	chmod 0644 "$stage/DEBIAN/"*
	find "$stage" -type d -exec chmod 0755 {} +
	deb=$dist/homering_${deb_version}_amd64.deb
	dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
	rellog "built dist/${deb##*/} (Depends: $depends, lp-solve)"
}

rel_maintainer() { echo "Homering maintainers <maintainers@users.noreply.a-seed-a3a75d88.example>"; }

rel_windows() {
	local out=$work/win pkg
	. build/windows.sh
	homering_win_packages
	homering_win_lpsolve
	homering_win_cinclude
	rellog "building homering.exe $version (-trimpath)"
	mkdir -p "$out"
	(
		homering_win_goenv
		CGO_CPPFLAGS="$CGO_CPPFLAGS -ffile-prefix-map=$HOMERING_CINCLUDE=/homering-cinclude"
		CGO_CPPFLAGS="$CGO_CPPFLAGS -ffile-prefix-map=$HOMERING_WIN_CINCLUDE=/homering-win-cinclude"
		go build -trimpath -ldflags "$goldflags" -o "$out/homering.exe" .
		# The same program linked for the GUI subsystem, with its Wails
		# window (WebView2; Wails' own tags): what the Start menu and start
		# at login run. Windows gives it no console window (a console exe
		# started from a shortcut opens one for its whole life) and no
		# standard handles, so the agent logs to agent.log in its config
		# directory; without the WebView2 runtime "Open chat" opens the
		# browser. The console exe stays the CLI on a terminal.
		go build -trimpath -tags desktop,production -ldflags "$goldflags -H windowsgui" -o "$out/homering-app.exe" .
	)
	rel_no_build_paths "$out/homering.exe"
	rel_no_build_paths "$out/homering-app.exe"
	cp "$HOMERING_WIN_LPSOLVE/lib/lpsolve55.dll" "$out/"
	# lp_solve is LGPL 2.1: its license and where the DLL's source is.
	cp /usr/share/common-licenses/LGPL-2.1 "$out/lpsolve55-LICENSE.txt"
	cat >"$out/lpsolve55-SOURCE.txt" <<EOF
lpsolve55.dll is lp_solve 5.5.2.5 (LGPL 2.1, see lpsolve55-LICENSE.txt), compiled with
mingw-w64 from Debian's source package lp-solve $homering_lpsolve_version
(lp-solve_5.5.2.5.orig.tar.gz, sha256 $homering_lpsolve_orig_sha256) by
build/windows.sh in Homering's source. Replace the DLL with your own build to relink.
EOF
	rel_icon_png "$work/icon.png"
	rel_ico "$work/icon.png" "$out/homering.ico"

	pkg=homering-$version-windows-amd64
	rm -f "$dist/$pkg.zip"
	mkdir -p "$work/zip/$pkg"
	cp "$out"/homering.exe "$out"/homering-app.exe "$out"/lpsolve55.dll "$out"/lpsolve55-*.txt "$work/zip/$pkg/"
	rel_cpu_libs cpu-windows "$out/lib/homering-cpu/$ggml_dir"
	cp -r "$out/lib" "$work/zip/$pkg/"
	find "$work/zip" -exec touch -d "@$epoch" {} +
	(cd "$work/zip" && find "$pkg" -type f | sort | zip -q -X -9 "$dist/$pkg.zip" -@)
	rellog "built dist/$pkg.zip"

	# NSIS 3.08: Target amd64-unicode (the default x86 stub does not run
	# under wine64 alone, and a 64-bit stub is what Program Files wants).
	makensis -V2 -INPUTCHARSET UTF8 -DVERSION="$version" -DSRCDIR="$out" \
		-DOUTFILE="$dist/$pkg-setup.exe" -DLINKPORT=47470 build/release/homering.nsi >&2
	rellog "built dist/$pkg-setup.exe"
}

case $what in
all)
	rel_linux
	rel_windows
	;;
linux) rel_linux ;;
windows) rel_windows ;;
esac
ls -l "$dist" >&2
