#!/usr/bin/env bash
# Builds Homering for macOS (darwin/arm64: Metal, the tray and the Wails
# window) into OUTDIR: Homering.app and homering-VERSION-macos-arm64.dmg.
# Runs on a macOS runner (.github/workflows/release.yml's macos-14 job) with
# Go, Node and Homebrew's lp_solve and nlohmann-json. Nothing here has run on
# a Mac yet: this machine cannot compile for Apple's SDK.
#   --dry-run (any OS) prints each Apple-only step instead of running it and
#   assembles the bundle's tree with empty stand-ins for the binary and the
#   dylib, so that the layout, plists and icon are checked on Linux
#   (build/release-test.sh).
# Signing, only when the secrets exist: HOMERING_MAC_SIGN_ID (a "Developer ID
# Application" identity in the keychain) signs with the hardened runtime;
# with HOMERING_MAC_NOTARY_PROFILE (a `xcrun notarytool store-credentials`
# profile) the dmg is notarized and stapled. Without them the app is signed
# ad hoc (arm64 runs nothing unsigned, and install_name_tool breaks the
# linker's signature).
# Usage: build/macos-app.sh [--dry-run] OUTDIR
set -euo pipefail
dry=0
if [ "${1:-}" = --dry-run ]; then
	dry=1
	shift
fi
out=${1:?usage: build/macos-app.sh [--dry-run] OUTDIR}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
mkdir -p "$out"
out=$(cd "$out" && pwd)
version=$(bash build/release.sh version)
app=$out/Homering.app
# stb_image.h for ollama's llama.cpp: the commit and bytes of Debian 12's
# libstb-dev (0.0~git20220908.8b5f1f3), which the Linux build uses.
stb_commit=8b5f1f37b5b75829fc72d38e7b5d4bcbf8a26d55
stb_sha256=91f435e0fc6a620018b878b9859c74dff60d28046f87e649191ad6f35a98c722

maclog() { printf 'macos: %s\n' "$*" >&2; }
# x CMD...: run CMD, or print it in a dry run.
x() {
	if [ $dry = 1 ]; then
		printf 'would run:'
		printf ' %q' "$@"
		echo
	else
		"$@"
	fi
}

# The build-time headers build/setup.sh puts in place on Linux.
mac_headers() {
	local cinclude=$1 ollama_dir malgo_dir nlohmann
	ollama_dir=$(go list -m -f '{{.Dir}}' github.com/ollama/ollama)
	malgo_dir=$(go mod download -json github.com/gen2brain/malgo@v0.11.24 | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
	mkdir -p engine/ggml/include "$cinclude/miniaudio" "$cinclude/stb"
	cp -f "$ollama_dir"/ml/backend/ggml/ggml/include/*.h engine/ggml/include/
	cp -f "$malgo_dir/miniaudio.h" "$cinclude/miniaudio/miniaudio.h"
	cp -f "$ollama_dir/llama/llama.cpp/include/llama.h" "$cinclude/llama.h"
	chmod u+w engine/ggml/include/*.h "$cinclude"/miniaudio/miniaudio.h "$cinclude/llama.h"
	nlohmann=$(brew --prefix nlohmann-json)/include/nlohmann
	ln -sfn "$nlohmann" "$cinclude/nlohmann"
	curl -fsSL -o "$cinclude/stb/stb_image.h" "https://raw.githubusercontent.com/nothings/stb/$stb_commit/stb_image.h"
	echo "$stb_sha256  $cinclude/stb/stb_image.h" | shasum -a 256 -c
}

# homering.icns: one 256x256 PNG entry (ic08) in an ICNS container.
mac_icns() {
	local png=$1 n
	n=$(($(wc -c <"$png") + 8))
	{
		printf 'icns'
		mac_be32 $((n + 8))
		printf 'ic08'
		mac_be32 "$n"
		cat "$png"
	} >"$2"
}
# shellcheck disable=SC2059 # the format is the octal escapes of the bytes
mac_be32() {
	printf "\\$(printf %03o $(($1 >> 24 & 255)))\\$(printf %03o $(($1 >> 16 & 255)))"
	printf "\\$(printf %03o $(($1 >> 8 & 255)))\\$(printf %03o $(($1 & 255)))"
}

mac_plists() {
	cat >"$app/Contents/Info.plist" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>CFBundleName</key><string>Homering</string>
	<key>CFBundleDisplayName</key><string>Homering</string>
	<key>CFBundleIdentifier</key><string>com.homering.app</string>
	<key>CFBundleExecutable</key><string>homering</string>
	<key>CFBundleIconFile</key><string>homering</string>
	<key>CFBundlePackageType</key><string>APPL</string>
	<key>CFBundleShortVersionString</key><string>${version%%-*}</string>
	<key>CFBundleVersion</key><string>$version</string>
	<key>LSMinimumSystemVersion</key><string>12.0</string>
	<key>LSUIElement</key><true/>
	<key>NSHighResolutionCapable</key><true/>
	<key>NSLocalNetworkUsageDescription</key><string>Homering finds and joins the other computers of your home that run it.</string>
	<key>NSBonjourServices</key><array><string>_homering._tcp</string></array>
</dict>
</plist>
EOF
	# Start at login: SMAppService.agent(plistName:) registers a plist from
	# Contents/Library/LaunchAgents (BundleProgram); copied to
	# ~/Library/LaunchAgents instead, ProgramArguments names the installed app.
	cat >"$app/Contents/Library/LaunchAgents/com.homering.agent.plist" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key><string>com.homering.agent</string>
	<key>BundleProgram</key><string>Contents/MacOS/homering</string>
	<key>ProgramArguments</key><array><string>/Applications/Homering.app/Contents/MacOS/homering</string></array>
	<key>RunAtLoad</key><true/>
	<key>ProcessType</key><string>Interactive</string>
</dict>
</plist>
EOF
}

rm -rf "$app"
mkdir -p "$app/Contents/MacOS" "$app/Contents/Frameworks" "$app/Contents/Resources" "$app/Contents/Library/LaunchAgents"
mac_plists
convert -size 256x256 xc:none -fill none -stroke '#3a6ea5' -strokewidth 32 \
	-draw 'circle 128,128 128,40' -stroke none -fill '#e09a3e' -draw 'circle 128,40 128,12' -define png:exclude-chunks=date,time "png32:$out/icon.png"
mac_icns "$out/icon.png" "$app/Contents/Resources/homering.icns"
rm -f "$out/icon.png"

bin=$app/Contents/MacOS/homering
dylib=$app/Contents/Frameworks/liblpsolve55.dylib
if [ $dry = 1 ]; then
	maclog "dry run: empty stand-ins for the binary and lp_solve's dylib"
	: >"$bin"
	: >"$dylib"
	chmod 0755 "$bin"
	x mac_headers "$out/cinclude"
	x npm --prefix frontend ci
	x npm --prefix frontend run build
	# shellcheck disable=SC2016 # printed, not run
	lp='$(brew --prefix lp_solve)'
else
	[ "$(uname -s)" = Darwin ] || {
		maclog "needs macOS (or --dry-run)"
		exit 2
	}
	mac_headers "$out/cinclude"
	npm --prefix frontend ci --no-audit --no-fund
	npm --prefix frontend run build
	lp=$(brew --prefix lp_solve)
fi
# Wails without its CLI needs UniformTypeIdentifiers; ollama's cgo lines
# bring Metal, MetalKit and Accelerate themselves.
x env CGO_ENABLED=1 GOOS=darwin GOARCH=arm64 \
	CGO_CFLAGS="-O2 -mmacosx-version-min=12.0 -I$lp/include -I$lp/include/lpsolve" \
	CGO_CXXFLAGS="-O2 -mmacosx-version-min=12.0" \
	CGO_CPPFLAGS="-I$out/cinclude -ffile-prefix-map=$out/cinclude=/homering-cinclude" \
	CGO_LDFLAGS="-L$lp/lib -mmacosx-version-min=12.0 -framework UniformTypeIdentifiers" \
	go build -trimpath -tags desktop,production -ldflags "-s -w -X homering/app.Version=$version" -o "$bin" .
# lp_solve's dylib inside the bundle, and the binary pointed at it.
x cp "$lp/lib/liblpsolve55.dylib" "$dylib"
x chmod u+w "$dylib"
x install_name_tool -id @rpath/liblpsolve55.dylib "$dylib"
if [ $dry = 0 ]; then
	old=$(otool -L "$bin" | awk '/liblpsolve55/ {print $1}')
	install_name_tool -change "$old" @executable_path/../Frameworks/liblpsolve55.dylib "$bin"
	if otool -L "$bin" "$dylib" | grep -E '/opt/homebrew|/usr/local/'; then
		maclog "FAIL: the bundle still links outside itself"
		exit 1
	fi
	plutil -lint "$app/Contents/Info.plist" "$app/Contents/Library/LaunchAgents/com.homering.agent.plist"
	"$bin" version
fi

if [ -n "${HOMERING_MAC_SIGN_ID:-}" ]; then
	x codesign --force --options runtime --timestamp --sign "$HOMERING_MAC_SIGN_ID" "$dylib"
	x codesign --force --options runtime --timestamp --sign "$HOMERING_MAC_SIGN_ID" "$app"
else
	maclog "no HOMERING_MAC_SIGN_ID: signing ad hoc"
	x codesign --force --sign - "$dylib"
	x codesign --force --sign - "$app"
fi

dmg=$out/homering-$version-macos-arm64.dmg
mkdir -p "$out/dmg"
rm -rf "$out/dmg/Homering.app" "$out/dmg/Applications"
cp -R "$app" "$out/dmg/"
ln -s /Applications "$out/dmg/Applications"
x hdiutil create -volname Homering -srcfolder "$out/dmg" -ov -format UDZO "$dmg"
if [ -n "${HOMERING_MAC_SIGN_ID:-}" ] && [ -n "${HOMERING_MAC_NOTARY_PROFILE:-}" ]; then
	x codesign --force --timestamp --sign "$HOMERING_MAC_SIGN_ID" "$dmg"
	x xcrun notarytool submit "$dmg" --keychain-profile "$HOMERING_MAC_NOTARY_PROFILE" --wait
	x xcrun stapler staple "$dmg"
else
	maclog "no notary profile: the dmg is not notarized"
fi
maclog "built $app and $dmg"
