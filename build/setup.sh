#!/usr/bin/env bash
# Sets up a Debian 12 machine (as root) to build, run and test Homering, and
# builds bin/homering. Idempotent: a second run only checks and rebuilds what
# changed. Installs: Debian packages, the pinned Go modules, the C headers cgo
# needs (taken from the pinned modules, never committed), generated test models.
set -euo pipefail
cd "$(dirname "$0")/.."
. build/env.sh

log() { printf 'setup: %s\n' "$*" >&2; }

# Debian packages. Each line says who needs it.
apt_packages=(
	build-essential pkg-config       # cgo (ggml, llama.cpp, lp_solve, GTK)
	liblpsolve55-dev lp-solve        # halda/lpsolve: lp_solve headers + shared library
	nlohmann-json3-dev libstb-dev    # ollama's llama package: headers its module zip drops
	iproute2 iptables                # tests: network namespaces, veth, netem
	procps util-linux                # tests: ps, mount, cgroup helpers
)
if [ -f build/apt-extra.txt ]; then
	# shellcheck disable=SC2207
	apt_packages+=($(grep -v '^#' build/apt-extra.txt))
fi
missing=()
for p in "${apt_packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing Debian packages: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

log "downloading Go modules"
go mod download

# Headers from the pinned modules (build-time only, ignored by git).
ollama_dir=$(go list -m -f '{{.Dir}}' github.com/ollama/ollama)
mkdir -p engine/ggml/include
cp -f "$ollama_dir"/ml/backend/ggml/ggml/include/*.h engine/ggml/include/
chmod u+w engine/ggml/include/*.h
malgo_dir=$(go mod download -json github.com/gen2brain/malgo@v0.11.24 | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
mkdir -p "$HOMERING_CINCLUDE"/miniaudio
cp -f "$malgo_dir/miniaudio.h" "$HOMERING_CINCLUDE"/miniaudio/miniaudio.h
chmod u+w "$HOMERING_CINCLUDE"/miniaudio/miniaudio.h
# --- engine/llama: llama.h for its own cgo shim (chat templates, vocab ids the
# ollama wrapper does not expose). It includes ggml.h, found in engine/ggml/include.
cp -f "$ollama_dir"/llama/llama.cpp/include/llama.h "$HOMERING_CINCLUDE"/llama.h
chmod u+w "$HOMERING_CINCLUDE"/llama.h
# --- end engine/llama

# --- frontend (web UI, embedded by go:embed in frontend/assets.go, so it is
# built before the binary): exact pins in package-lock.json; also installs
# playwright-core for the UI test (it drives Debian's chromium).
command -v node >/dev/null && node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>20||(a==20&&b>=19)?0:1)' ||
	{ log "the web UI needs Node.js >= 20.19 (vite 8); install it (nodesource node_20.x or newer) and run setup again"; exit 1; }
log "building the web UI (frontend/dist)"
(cd frontend && npm ci --no-audit --no-fund --loglevel=error && npm run build --silent) >&2
# --- end frontend

# --- app/apptest/clients: the official openai, @anthropic-ai/sdk and ollama
# npm packages (exact pins in package-lock.json) that clients_test.go drives
# against a running agent.
log "installing the API client SDKs for app/apptest"
(cd app/apptest/clients && npm ci --no-audit --no-fund --loglevel=error) >&2
# --- end app/apptest/clients

# --- GPU backend (issue 17): libggml-vulkan.so and its libggml-base.so from the
# pinned ollama module's ggml, built with CMake into the user's cache under a
# key of its inputs (module version, glslc, CMake, Vulkan headers, the
# script): ~2 min of 2 cores once, then a second set-up finds it current.
# build/test.sh hands the directory to engine/gputest, which runs it on lavapipe.
log "building ggml's Vulkan backend (build/gpu-lib.sh; once per ggml version)"
bash build/gpu-lib.sh vulkan >/dev/null
# --- end GPU backend

# --- CPU variants (issues 16 and 22): ggml's CPU backend as libraries for
# x64 (baseline), haswell (AVX2/FMA) and icelake (AVX-512 VNNI), from the
# same module sources, cached the same way: ~1.5 min of 2 cores once (the
# Windows DLLs: build/windows.sh, ~2 min). build/test.sh hands the directory
# to engine/ggml's TestCPUVariants and bench/engine.sh; release.sh ships them.
log "building ggml's CPU variants (build/gpu-lib.sh cpu; once per ggml version)"
bash build/gpu-lib.sh cpu >/dev/null
# --- end CPU variants

log "building bin/homering (first build compiles ggml and llama.cpp: several minutes)"
go build -o bin/homering .

if [ -x build/gen-models.sh ]; then
	bash build/gen-models.sh
fi
log "ok ($(bin/homering version 2>/dev/null || echo built))"
