#!/usr/bin/env bash
# Builds homering with its window (app/window, Wails v2.15.0 on GTK 3 and
# WebKitGTK 4.1): `homering ui` then opens a native window instead of saying
# how to get one. Needs the Debian packages libgtk-3-dev libwebkit2gtk-4.1-dev
# (build/apt-extra.txt, installed by build/setup.sh) and the built web UI
# (frontend/dist, also made by setup). The plain `go build` and `go test ./...`
# need neither: the Wails code builds only with these tags.
# Usage: build/build-desktop.sh [OUTPUT]   (default bin/homering-desktop)
set -euo pipefail
cd "$(dirname "$0")/.."
. build/env.sh
out=${1:-bin/homering-desktop}
# desktop,production: Wails' own tags for a release build without its CLI;
# webkit2_41: link webkit2gtk-4.1 (Debian 13 and Ubuntu 24.04 ship only it).
go build -tags desktop,production,webkit2_41 -o "$out" .
echo "built $out" >&2
