# shellcheck shell=bash
# Source this file (". build/env.sh") before go build/test/vet by hand; the
# scripts in build/ do it themselves. It sets the cgo flags every package needs:
#   - lp_solve for golp (Debian keeps the headers in /usr/include/lpsolve and the
#     shared library off the default linker path, in /usr/lib/lp_solve);
#   - miniaudio.h (and llama.h) for ollama's llama package (Go module zips drop vendor/ dirs;
#     setup copies it from the pinned github.com/gen2brain/malgo module);
#   - an explicit optimisation level and ISA: setting CGO_CFLAGS replaces cgo's
#     default "-O2 -g", and cgo's default ISA is baseline x86-64 (SSE2), which
#     makes ggml's quantized kernels ~3x slower than x86-64-v3 (AVX2/FMA/F16C).
# HOMERING_PORTABLE=1 forces the baseline ISA (binaries that run on any x86-64).
# The flags are part of Go's build cache key: keep them identical everywhere, or
# ggml and llama.cpp are recompiled (1-5 minutes on 2 cores).
HOMERING_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export HOMERING_ROOT

homering_isa_flags() {
	if [ -n "${HOMERING_PORTABLE:-}" ] || [ "$(uname -m)" != x86_64 ]; then
		return
	fi
	# x86-64-v3 = AVX, AVX2, BMI1/2, F16C, FMA, LZCNT, MOVBE, XSAVE.
	local f
	for f in avx2 fma f16c bmi2 movbe; do
		grep -qw "$f" /proc/cpuinfo || return
	done
	echo "-march=x86-64-v3"
}

HOMERING_ISA=$(homering_isa_flags)
export HOMERING_ISA
export CGO_ENABLED=1
export CGO_CFLAGS="-O2 $HOMERING_ISA -I/usr/include/lpsolve"
export CGO_CXXFLAGS="-O2 $HOMERING_ISA"
# Build-time headers live at a path that does not depend on where the checkout
# is: the path is part of the flags, hence of the cache key of ollama's ggml
# and llama.cpp packages, so a per-checkout path would recompile them (5-10
# minutes) in every fresh clone, CI's included.
HOMERING_CINCLUDE=${HOMERING_CINCLUDE:-${XDG_CACHE_HOME:-$HOME/.cache}/homering/cinclude}
export HOMERING_CINCLUDE
export CGO_CPPFLAGS="-I$HOMERING_CINCLUDE"
export CGO_LDFLAGS="-L/usr/lib/lp_solve -llpsolve55 -Wl,-rpath,/usr/lib/lp_solve"
export PATH="/usr/local/go/bin:$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin:$PATH"
