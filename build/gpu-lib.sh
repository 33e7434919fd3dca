#!/usr/bin/env bash
# Builds ggml backend libraries (a GPU one, libggml-cuda.so or libggml-vulkan.so,
# or the CPU variants, libggml-cpu-<variant>.so; each with the libggml-base.so
# it links) from the ggml sources of the pinned
# github.com/ollama/ollama module, with ollama's own CMake files: the library
# must come from the same ggml headers the Go binary was built with (ollama
# patched ggml_backend_dev_props; a stock llama.cpp library would load and
# misread it).
#
#   build/gpu-lib.sh cuda   [OUT]   needs nvcc (CUDA 12 or 13), cmake, ninja
#   build/gpu-lib.sh vulkan [OUT]   needs cmake, ninja, glslc, libvulkan-dev
#                                   (older than 1.3.261: newer headers fetched)
#   build/gpu-lib.sh cpu    [OUT]   ggml's CPU backend, one library per variant
#                                   in HOMERING_CPU_VARIANTS (default "x64
#                                   haswell icelake": baseline x86-64, AVX2/FMA,
#                                   AVX-512 VNNI/VBMI), each exporting
#                                   ggml_backend_score; needs cmake, ninja, gcc
#   build/gpu-lib.sh cpu-windows [OUT]  the same variants as Windows DLLs
#                                   (ggml-cpu-<variant>.dll, ggml-base.dll),
#                                   cross-built with mingw-w64 (build/windows.sh)
#   build/gpu-lib.sh stage DIR      copies the sources it needs into DIR, for a
#                                   machine without Go (HOMERING_OLLAMA_SRC=DIR)
#
# OUT defaults to $XDG_CACHE_HOME/homering/gpu/<backend>-<module version>-<key>,
# where key hashes the inputs that change the library (compiler version,
# architectures, Vulkan header version, this script); a second run with the
# same inputs rebuilds nothing.
# CUDA_ARCHS picks the GPU architectures (default: native, the GPUs of this
# machine; a release names its list, e.g. "75-virtual;80;86;89;90;120").
# The script prints the directory holding the libraries on its last line; load
# them with ggml.LoadBackends(dir) or `homering run --gpu-dir dir`; the CPU
# variants with ggml.LoadCPU (engine/runner's LoadCPU, HOMERING_CPU_DIR).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
backend=${1:?usage: build/gpu-lib.sh cuda|vulkan|cpu|cpu-windows|stage [DIR]}

src=${HOMERING_OLLAMA_SRC:-}
version=
if [ -z "$src" ]; then
	# shellcheck source=build/env.sh
	. "$here/env.sh"
	cd "$HOMERING_ROOT"
	src=$(go list -m -f '{{.Dir}}' github.com/ollama/ollama)
	version=$(go list -m -f '{{.Version}}' github.com/ollama/ollama)
elif [ -f "$src/VERSION" ]; then
	version=$(cat "$src/VERSION")
fi
[ -f "$src/CMakeLists.txt" ] || { echo "gpu-lib: no ollama sources at $src" >&2; exit 1; }

if [ "$backend" = stage ]; then
	dir=${2:?usage: build/gpu-lib.sh stage DIR}
	rm -rf "$dir" && mkdir -p "$dir/ml/backend/ggml"
	cp "$src/CMakeLists.txt" "$src/CMakePresets.json" "$dir/"
	cp -r "$src/ml/backend/ggml/ggml" "$dir/ml/backend/ggml/"
	echo "$version" >"$dir/VERSION"
	chmod -R u+w "$dir"
	echo "$dir"
	exit 0
fi

# ggml-vulkan.cpp uses vk::LayerSettingEXT, new in the Vulkan headers 1.3.261;
# Debian 12 ships 1.3.239. Where the system's are older, the headers (only
# they: the build links and the runtime loads the system's libvulkan) come
# from Debian 13's libvulkan-dev, fetched once, checked against its pinned
# hash and unpacked (dpkg-deb -x) into the user's cache, never vendored.
# VULKAN_HEADERS=DIR (holding vulkan/vulkan.hpp) overrides both.
vk_deb=libvulkan-dev_1.4.309.0-1_amd64.deb # headers only: any host architecture
vk_deb_sha256=8d329d465e16168afff58b1bd0dd6db46aac2cc3f56054a481b25a04e90b345a
vk_deb_url=${VULKAN_HEADERS_DEB_URL:-http://deb.debian.org/debian/pool/main/v/vulkan-loader/$vk_deb}
vk_header_version() { sed -n 's/^#define VK_HEADER_VERSION \([0-9]*\).*/\1/p' "$1/vulkan/vulkan_core.h" 2>/dev/null; }
vulkan_headers() {
	[ -z "${VULKAN_HEADERS:-}" ] || return 0
	local have
	have=$(vk_header_version /usr/include)
	[ "${have:-0}" -lt 261 ] || return 0
	local dir=${XDG_CACHE_HOME:-$HOME/.cache}/homering/vulkan-headers/${vk_deb%.deb}
	VULKAN_HEADERS=$dir/usr/include
	[ -f "$VULKAN_HEADERS/vulkan/vulkan.hpp" ] && return 0
	echo "gpu-lib: the system's Vulkan headers are 1.3.${have:-none} (need >= 1.3.261): unpacking $vk_deb into $dir" >&2
	local tmp
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/homering-vk-headers.XXXXXX")
	curl -fsSL --retry 3 -o "$tmp/$vk_deb" "$vk_deb_url" || { echo "gpu-lib: cannot download $vk_deb_url" >&2; rm -rf "$tmp"; exit 1; }
	echo "$vk_deb_sha256  $tmp/$vk_deb" | sha256sum -c --quiet - >&2 || { echo "gpu-lib: $vk_deb does not match its pinned sha256" >&2; rm -rf "$tmp"; exit 1; }
	dpkg-deb -x "$tmp/$vk_deb" "$tmp/x"
	rm -rf "$dir" && mkdir -p "$(dirname "$dir")" && mv "$tmp/x" "$dir"
	rm -rf "$tmp"
}

case "$backend" in
cuda)
	command -v nvcc >/dev/null || export PATH="$PATH:/usr/local/cuda/bin"
	command -v nvcc >/dev/null || { echo "gpu-lib: nvcc is not installed (the CUDA toolkit 12 or 13)" >&2; exit 1; }
	archs=${CUDA_ARCHS:-native}
	key="$(nvcc --version | tail -1) $archs"
	target=ggml-cuda
	;;
vulkan)
	command -v glslc >/dev/null || { echo "gpu-lib: glslc is not installed (Debian: apt-get install glslc)" >&2; exit 1; }
	vulkan_headers
	key="$(glslc --version | head -1) headers $(vk_header_version "${VULKAN_HEADERS:-/usr/include}")"
	target=ggml-vulkan
	;;
cpu | cpu-windows)
	# The variants shipped: x64 runs anywhere (SSE2, the x86-64 baseline);
	# haswell is x86-64-v3 (AVX2, FMA, F16C, BMI2: the ISA of dev builds,
	# build/env.sh); icelake adds AVX-512 F/BW/VL/DQ with VNNI and VBMI (Ice
	# Lake and later Intel, AMD Zen 4/5). ggml's other variants (sse42,
	# sandybridge, skylakex, alderlake) each cost another compile of the CPU
	# backend for a few percent on a few CPUs; they fall back to the variant
	# below them.
	variants=${HOMERING_CPU_VARIANTS:-x64 haswell icelake}
	cc=gcc cxx=g++
	if [ "$backend" = cpu-windows ]; then
		cc=x86_64-w64-mingw32-gcc-posix cxx=x86_64-w64-mingw32-g++-posix
	fi
	command -v "$cxx" >/dev/null || { echo "gpu-lib: $cxx is not installed" >&2; exit 1; }
	key="$("$cxx" --version | head -1) variants $variants"
	target=
	for v in $variants; do
		target+=" ggml-cpu-$v"
	done
	;;
*)
	echo "gpu-lib: unknown backend $backend (cuda, vulkan, cpu, cpu-windows or stage)" >&2
	exit 2
	;;
esac
for t in cmake ninja; do
	command -v "$t" >/dev/null || { echo "gpu-lib: $t is not installed" >&2; exit 1; }
done
key=$(printf '%s %s %s' "$key" "$(cmake --version | head -1)" "$(sha256sum "$0" | cut -c1-16)" | sha256sum | cut -c1-12)
out=${2:-${XDG_CACHE_HOME:-$HOME/.cache}/homering/gpu/$backend-${version:-unknown}-$key}
lib=$out/libggml-${backend}.so base=$out/libggml-base.so
case "$backend" in
cpu) lib=$out/libggml-cpu-${variants##* }.so ;;
cpu-windows) lib=$out/ggml-cpu-${variants##* }.dll base=$out/libggml-base.dll ;;
esac
if [ -f "$lib" ] && [ -f "$base" ] && [ -f "$out/homering-ggml.txt" ]; then
	echo "gpu-lib: $lib is current" >&2
	echo "$out"
	exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/homering-gpu-lib.XXXXXX")
trap 'rm -rf "$work"' EXIT
# A writable copy: module caches are read-only, and the Vulkan build needs
# files the module's vendoring left out (below).
"$0" stage "$work/src" >/dev/null
gsrc=$work/src/ml/backend/ggml/ggml/src
# shellcheck disable=SC2016 # $ORIGIN is for the loader, not the shell
# $ORIGIN: the backend finds its libggml-base beside it wherever the pair is
# copied (the build directory is deleted).
args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CCACHE=OFF -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN')
case "$backend" in
cuda)
	# Only the architectures asked for: ollama's presets build 12 of them
	# (an hour on 16 cores); one takes minutes.
	args+=(-DCMAKE_CUDA_ARCHITECTURES="$archs" -DCMAKE_CUDA_FLAGS="-t 4" -DCMAKE_DISABLE_FIND_PACKAGE_Vulkan=ON)
	;;
vulkan)
	# ollama's vendoring drops vulkan-shaders/feature-tests/: without them every
	# glslc extension check "passes" and unsupported shaders fail to compile.
	ft=$gsrc/ggml-vulkan/vulkan-shaders/feature-tests
	mkdir -p "$ft"
	for ext in coopmat:GL_KHR_cooperative_matrix coopmat2:GL_NV_cooperative_matrix2 \
		integer_dot:GL_EXT_integer_dot_product bfloat16:GL_EXT_bfloat16; do
		printf '#version 460\n#extension %s : require\nvoid main() {}\n' "${ext#*:}" >"$ft/${ext%%:*}.comp"
	done
	args+=(-DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON -DCMAKE_CUDA_COMPILER=)
	if [ -n "${VULKAN_HEADERS:-}" ]; then
		args+=(-DVulkan_INCLUDE_DIR="$VULKAN_HEADERS")
	fi
	;;
cpu | cpu-windows)
	# No OpenMP: the Go binary's static ggml uses ggml's own thread pool,
	# which the engine creates and hands to the backend (a libgomp pool
	# would ignore it and spin beside the Go runtime). No GPU toolkit.
	# C++ at -O2, C at -O3: the optimisation levels cgo compiles the same
	# files with (ggml-cpu's cgo line adds -O3 to C only, build/env.sh sets
	# -O2). CMake's -O3 for C++ changes float results (the F32 path of
	# stories260K: 7940 of 8704 logits differed from the built-in haswell's
	# ISA); at -O2 the haswell variant gives the built-in backend's bits.
	# The prefix map keeps this build's temporary path out of the
	# libraries' assert messages.
	args+=(-DGGML_OPENMP=OFF -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON -DCMAKE_CUDA_COMPILER=
		-DCMAKE_DISABLE_FIND_PACKAGE_Vulkan=ON -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx"
		"-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" "-DCMAKE_C_FLAGS=-ffile-prefix-map=$work/src=ollama"
		"-DCMAKE_CXX_FLAGS=-ffile-prefix-map=$work/src=ollama")
	if [ "$backend" = cpu-windows ]; then
		# ollama's install() rule for the CPU libraries lists their runtime
		# dependencies, which CMake refuses to do when cross-compiling; the
		# script installs nothing, so the copy's rule loses those two lines.
		sed -i '/install(TARGETS ggml-base/,/RUNTIME DESTINATION/{/RUNTIME_DEPENDENCIES\|PRE_EXCLUDE_REGEXES/d}' "$work/src/CMakeLists.txt"
		# -static: the DLLs carry libgcc, libstdc++ and winpthread (the
		# exe links them statically too), so nothing else ships beside;
		# --exclude-libs: without it the base DLL re-exports libgcc's
		# _Unwind_Resume and the variants' links find it twice.
		args+=(-DCMAKE_SYSTEM_NAME=Windows -DCMAKE_SYSTEM_PROCESSOR=x86_64
			-DCMAKE_RC_COMPILER=x86_64-w64-mingw32-windres
			"-DCMAKE_SHARED_LINKER_FLAGS=-static -Wl,--exclude-libs,ALL"
			"-DCMAKE_MODULE_LINKER_FLAGS=-static -Wl,--exclude-libs,ALL")
	fi
	;;
esac
echo "gpu-lib: configuring ${target# } from $src" >&2
cmake -S "$work/src" -B "$work/b" "${args[@]}" >"$work/configure.log" 2>&1 || { cat "$work/configure.log" >&2; exit 1; }
echo "gpu-lib: building ${target# } with $(nproc) jobs" >&2
# shellcheck disable=SC2086 # the CPU variants' targets are one word each
cmake --build "$work/b" --target $target -j "$(nproc)" >"$work/build.log" 2>&1 || { tail -60 "$work/build.log" >&2; exit 1; }
rm -rf "$out.tmp" && mkdir -p "$out.tmp"
case "$backend" in
cpu) cp -a "$work/b/lib/ollama/"libggml-base.so* "$work/b/lib/ollama/"libggml-cpu-*.so "$out.tmp/" ;;
cpu-windows)
	# mingw's CMake names them lib*.dll whatever the prefix asked for;
	# ggml's loader looks for ggml-cpu-*.dll, and the variants import the
	# base by the name it was linked as.
	for f in "$work/b/lib/ollama/"*ggml-*.dll; do
		n=$(basename "$f")
		case "$n" in libggml-cpu-*) n=${n#lib} ;; esac
		cp "$f" "$out.tmp/$n"
	done
	x86_64-w64-mingw32-strip --strip-unneeded "$out.tmp/"*.dll
	;;
*) cp -a "$work/b/lib/ollama/"libggml-base.so* "$work/b/lib/ollama/libggml-$backend".so* "$out.tmp/" ;;
esac
# The loader (engine/runner's LoadGPU) refuses a directory without this
# stamp or with another version: a library from other ggml headers loads
# and then misreads ollama's ggml_backend_dev_props.
printf 'github.com/ollama/ollama %s\n' "${version:-unknown}" >"$out.tmp/homering-ggml.txt"
rm -rf "$out" && mv "$out.tmp" "$out"
echo "gpu-lib: built $(du -sh "$lib" | cut -f1) $lib" >&2
echo "$out"
