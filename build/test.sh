#!/usr/bin/env bash
# Sets up this machine (build/setup.sh) and runs every test: vet, the unit and
# end-to-end tests with the race detector, short fuzzing of the parsers that
# read untrusted bytes, and every benchmark once so that none of them rots.
# Exit status is non-zero when anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash build/setup.sh
. build/env.sh

step() { printf '\n=== %s\n' "$*"; }

step "go vet"
go vet ./...

# Every Go file as gofmt writes it (helpers sharing one tree left a few
# unformatted files that vet and lint do not see).
step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
	echo "not formatted by gofmt (run gofmt -w on them):" $unformatted
	exit 1
fi

# >>> lint (issue 15 item 6): go.mod and go.sum must be tidy, and
# golangci-lint, pinned, must find nothing (.golangci.yml names its four
# linters and every exclusion, with why). The binary is built once into
# GOPATH/bin (1m50s here with its downloads) and rebuilt only when
# `golangci-lint version` reports another version or another Go. Measured
# here on 2 busy cores: tidy 1.3 s cold (it fetches a few test-only modules),
# 0.1 s warm; lint 11-27 s cold, 0.5 s warm (cache: ~/.cache/golangci-lint).
step "go mod tidy -diff"
go mod tidy -diff
step "golangci-lint"
golangci_lint=v2.15.0
if ! golangci-lint version 2>/dev/null | grep -q "version ${golangci_lint#v} built with $(go env GOVERSION) "; then
	go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$golangci_lint"
fi
golangci-lint run ./...
# The desktop build (build/build-desktop.sh's tags) adds only app/window's
# Wails half; lint it too (4 s).
golangci-lint run --build-tags desktop,production,webkit2_41 ./app/window/...
# <<< lint

# >>> engine/profile/sysinfo (profile helper): its per-OS memory, swap and disk
# code is pure Go, so it is vetted and built for the other OSes here. The rest
# of engine/profile calls ggml through cgo and cannot be cross-built.
step "go vet engine/profile/sysinfo for darwin and windows"
for target in darwin/amd64 darwin/arm64 windows/amd64; do
	CGO_ENABLED=0 GOOS=${target%/*} GOARCH=${target#*/} go vet ./engine/profile/sysinfo
	CGO_ENABLED=0 GOOS=${target%/*} GOARCH=${target#*/} go build -o /dev/null ./engine/profile/sysinfo
done
# <<< engine/profile/sysinfo

# >>> app (desktop helper): the API types, clients and compatible APIs are
# pure Go and must build for the Mac and Windows app. app/tray (fyne's
# systray is cgo on macOS) and app itself (ggml, lp_solve) need the target's
# C toolchain and are not cross-built here; the tray's main-thread rule lives
# in app/mainthread.go and is checked on Linux by the desktop test.
step "go vet the API packages for darwin and windows"
for target in darwin/amd64 darwin/arm64 windows/amd64; do
	CGO_ENABLED=0 GOOS=${target%/*} GOARCH=${target#*/} go vet ./app/api/apitype/... ./app/api/client ./app/api/openai ./app/api/anthropic ./app/api/ollama ./app/config ./app/window ./app/autostart
done
# <<< app

# >>> frontend (web UI): TypeScript and Svelte checks. The UI's end-to-end
# test (chromium driving a real agent) is app/apptest TestWebUI, in go test.
step "frontend: svelte-check"
(cd frontend && npm run check --silent)
# <<< frontend

# >>> windows (cross-build + Wine): go vet for windows/amd64 with cgo, then
# bin/homering.exe built with mingw-w64 and run under Wine 8.0 against the
# Linux build: the same greedy 64 tokens, inspect and plan output byte for
# byte, engine/ggml's and engine/runner's Windows tests, halda's tests on the
# mingw lp_solve DLL, the engine's portable tests, and the same chat
# completion from `headless` through its engine child. lp_solve's DLL and the
# Wine prefix are cached outside the checkout, keyed by their inputs; Go's
# build cache keeps the mingw objects. Measured here: 4.5 min cold, 30 s warm.
step "windows: vet, cross-build bin/homering.exe, run it under Wine"
bash build/windows.sh test
# Issue 16's ring of a Linux head and a Windows worker (build/wine-ring.sh):
# homering.exe `headless` under Wine in a network namespace of its own, added
# by address (under Wine 8.0 Go opens no UDP socket, so no mDNS) and paired by
# code with a Linux head in another; the ring's greedy 48 tokens across both,
# in one round and in two, must equal the head's alone. Measured here: 5-10 s
# on two loaded cores.
step "windows: a ring of a Linux head and a Windows worker under Wine"
bash build/wine-ring.sh
# <<< windows

# >>> release (issue 16 items 2, 5, 6): build/release-test.sh runs shellcheck
# on build/*.sh, builds dist/ with build/release.sh (the .deb, the tarball,
# the Windows zip and NSIS installer) and checks them: lintian has no errors
# on the .deb, dpkg-deb -c lists its files, no build-machine path in the
# binaries, the extracted .deb and tarball binaries and the installer's exe
# under Wine print the same greedy 64 tokens as bin/homering, setup.exe /S
# makes the Run key, uninstall entry and shortcut and uninstall.exe /S removes
# them; the zip's exe's tray sets its icon (ICO) under Wine and Xvfb;
# build/smoke.sh and build/macos-app.sh --dry-run pass. Needs the windows
# section's DLL and Wine prefix. Measured here: 50-65 s warm; cold, the
# baseline-ISA -trimpath builds compile ggml and llama.cpp again (3.5 min for
# Linux and mingw on two cores; ~7 loaded), then Go's build cache keeps them.
step "release: build/release.sh's .deb, tarball, zip and installer, checked"
bash build/release-test.sh
# <<< release

# >>> gpu (issue 17 items 2, 4 and 5): engine/gputest runs the window engine's
# GPU path on Mesa's lavapipe with the Vulkan backend set-up built; gpu-lib.sh
# finds it current and prints its directory. engine/ring/driver/gpudriver
# (a ring's plan with GPU layers, ~2 s) and app's TestRunGPULayers (`homering
# run --gpu-layers 2` and 5 against the CPU's greedy text, ~8 s) use it too,
# through internal/testgpu. Set, a missing library or device fails those
# tests (unset, outside this script, they skip). Measured here: ~1 min of
# tests warm, ~3 min with a cold Mesa shader cache
# (~/.cache/homering/mesa-shader-cache, kept across runs).
HOMERING_GPU_LIB_DIR=$(bash build/gpu-lib.sh vulkan | tail -n 1)
export HOMERING_GPU_LIB_DIR
# <<< gpu

# >>> cpu variants (issues 16 and 22): ggml's CPU backend variants set-up
# built (gpu-lib.sh finds them current). engine/ggml's TestCPUVariants runs
# the engine on each this CPU runs (x64, haswell, icelake), one child process
# each, against the built-in backend: the same greedy tokens, haswell's
# logits bit for bit; bench/engine.sh (quick) times them side by side.
HOMERING_CPU_LIB_DIR=$(bash build/gpu-lib.sh cpu | tail -n 1)
export HOMERING_CPU_LIB_DIR
# <<< cpu variants

step "go test -race"
# Timeouts are generous: the first run compiles ggml and llama.cpp with -race.
go test -race -count=1 -timeout 45m ./...

step "fuzz (short)"
# Each target runs a count of inputs (build/fuzz-targets.txt, ~15 s each on a
# 2-core machine); build/fuzz.sh says why counts and not durations.
while read -r pkg target budget; do
	[ -n "$pkg" ] || continue
	bash build/fuzz.sh "$pkg" "$target" "$budget"
done < <(grep -v '^#' build/fuzz-targets.txt 2>/dev/null || true)

step "benchmarks (once each, so they keep compiling and running)"
go test -run '^$' -bench . -benchtime 1x -timeout 20m ./...
for b in bench/*.sh; do
	[ -e "$b" ] || continue
	BENCH_QUICK=1 bash "$b"
done
step "all tests passed"
