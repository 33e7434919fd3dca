#!/usr/bin/env bash
# The CUDA checks of the GPU issue, for a machine with an NVIDIA GPU, nvcc
# (CUDA 12/13), cmake and ninja but no Go and no internet (bench/device/
# holds what runs only on such a lent machine: build/test.sh's benchmark
# step runs bench/*.sh, not these). Two steps:
#
#   bench/device/gpu-cuda.sh prepare   here: stages into .gpu/ (ignored by git) the
#                               pinned ggml sources, the enginebench and
#                               homering binaries and the shared libraries
#                               they need (~45 MB)
#   bench/device/gpu-cuda.sh run       there: builds libggml-cuda.so for that GPU
#                               (build/gpu-lib.sh, CUDA_ARCHS, default native),
#                               generates the test models and runs
#                               enginebench -gpu-dir: logits of our window
#                               wholly on the GPU against the CPU window per
#                               weight type (tolerances in
#                               bench/enginebench/gpu.go), then prefill and
#                               decode speed of our window against llama.cpp
#                               (the pinned ollama/llama), both with every
#                               layer and the output head on the GPU, through
#                               the same library. Logs go to $OUT (else
#                               bench/out/gpu).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

case "${1:-run}" in
prepare)
	. build/env.sh
	rm -rf .gpu && mkdir -p .gpu/bin .gpu/lib
	build/gpu-lib.sh stage .gpu/src >/dev/null
	# -rdynamic: the backend module binds to the binary's own ggml-base (one
	# registry, one set of globals) instead of a second copy.
	go build -ldflags=-extldflags=-rdynamic -o .gpu/bin/enginebench ./bench/enginebench
	go build -o .gpu/bin/homering .
	cp -L /usr/lib/lp_solve/liblpsolve55.so /lib/x86_64-linux-gnu/libcolamd.so.2 \
		/lib/x86_64-linux-gnu/libsuitesparseconfig.so.5 .gpu/lib/
	du -sh .gpu
	;;
run)
	out=${OUT:-bench/out/gpu}
	mkdir -p "$out"
	[ -x .gpu/bin/enginebench ] || { echo "gpu-cuda: run 'bench/device/gpu-cuda.sh prepare' on the build machine first" >&2; exit 1; }
	export LD_LIBRARY_PATH="$root/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
		[ -d "$d" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
	done
	{
		nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv || true
		nvcc --version | tail -2 || true
		echo "cores $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "profilers: $(command -v perf nsys ncu | tr '\n' ' ')"
	} 2>&1 | tee "$out/machine.txt"

	t0=$(date +%s)
	lib=$(HOMERING_OLLAMA_SRC="$root/.gpu/src" CUDA_ARCHS="${CUDA_ARCHS:-native}" \
		build/gpu-lib.sh cuda /tmp/homering-gpu 2>"$out/build.log" | tail -1) || { tail -40 "$out/build.log"; exit 1; }
	echo "gpu-cuda: libggml-cuda built in $(($(date +%s) - t0)) s: $(ls -la "$lib" | tail -n +2 | awk '{print $5, $9}' | tr '\n' ' ')" | tee -a "$out/machine.txt"

	models=/tmp/homering-models
	mkdir -p "$models"
	gen() { # FILE FLAGS...
		local f=$1
		shift
		.gpu/bin/homering gen-model --keep --seed 1 --ctx 4096 "$@" -o "$models/$f" >/dev/null
	}
	small=()
	for t in F32 F16 Q8_0 Q4_0 Q4_K Q6_K; do
		gen "llama-$t.gguf" --arch llama --layers 4 --embd 256 --ff 512 --heads 4 --kv-heads 2 --vocab 1000 --type "$t" &
		gen "qwen3-$t.gguf" --arch qwen3 --layers 4 --embd 256 --ff 512 --heads 8 --kv-heads 2 --head-dim 64 --vocab 1000 --type "$t" &
		small+=("$models/llama-$t.gguf" "$models/qwen3-$t.gguf")
	done
	gen llama-1g-Q8_0.gguf --arch llama --layers 16 --embd 2048 --ff 5632 --heads 16 --kv-heads 4 --vocab 32000 --type Q8_0 &
	gen llama-1g-Q4_K.gguf --arch llama --layers 36 --embd 2048 --ff 5632 --heads 16 --kv-heads 4 --vocab 32000 --type Q4_K &
	wait

	threads=${GPU_THREADS:-4}
	status=0
	if [ "${GPU_ONLY:-}" = families ]; then
		# The 2026 families (issue 20) on this GPU: logits against our CPU
		# window and llama.cpp's GPU run; nothing else.
		fam=()
		for t in F32 Q4_K; do
			gen "qwen3moe-$t.gguf" --arch qwen3moe --layers 4 --embd 256 --ff 512 --heads 8 --kv-heads 2 --head-dim 64 --vocab 1000 --type "$t" --experts 8 --experts-used 2 --expert-ff 256 &
			gen "gemma3-$t.gguf" --arch gemma3 --layers 7 --embd 256 --ff 512 --heads 4 --kv-heads 2 --head-dim 128 --vocab 1000 --type "$t" --tied --sliding-window 16 --rope-scale-linear 8 &
			gen "phi3-$t.gguf" --arch phi3 --layers 4 --embd 256 --ff 512 --heads 4 --kv-heads 2 --vocab 1000 --type "$t" &
			gen "gpt-oss-$t.gguf" --arch gpt-oss --layers 4 --embd 256 --ff 512 --heads 8 --kv-heads 2 --head-dim 64 --vocab 1000 --type "$t" --experts 8 --experts-used 4 --expert-ff 256 &
			gen "gemma2-$t.gguf" --arch gemma2 --layers 4 --embd 256 --ff 512 --heads 4 --kv-heads 2 --head-dim 128 --vocab 1000 --type "$t" --sliding-window 16 &
			fam+=("$models/qwen3moe-$t.gguf" "$models/gemma3-$t.gguf" "$models/phi3-$t.gguf" "$models/gpt-oss-$t.gguf" "$models/gemma2-$t.gguf")
		done
		wait
		.gpu/bin/enginebench -gpu-dir "$lib" -check-only -threads "$threads" \
			-models "$(IFS=,; echo "${fam[*]}")" 2>&1 | tee "$out/families.txt" || status=1
		exit $status
	fi
	# Logits first (small models of every type, two families), then speed
	# (the ~1 GB models): -check-only skips the speed part.
	.gpu/bin/enginebench -gpu-dir "$lib" -check-only -threads "$threads" \
		-models "$(IFS=,; echo "${small[*]}")" 2>&1 | tee "$out/logits.txt" || status=1
	# Speed, each run with llama.cpp beside it: "new" is the product as it
	# is; "old" restores the host path before 2026-11-26's change (a CPU
	# pool and pageable inputs for a window wholly on the GPU, and a new
	# logits slice per step); "pageable" restores only the first half. The
	# order alternates so that drift shows.
	: >"$out/speed.txt"
	for v in ${GPU_VARIANTS:-new old pageable new old}; do
		case $v in
		new) envs=() flags=() ;;
		old) envs=(HOMERING_GPU_HOST=pageable) flags=(-alloc) ;;
		pageable) envs=(HOMERING_GPU_HOST=pageable) flags=() ;;
		esac
		echo "== $v: ${envs[*]} ${flags[*]}" | tee -a "$out/speed.txt"
		env "${envs[@]}" .gpu/bin/enginebench -gpu-dir "$lib" -no-check -threads "$threads" -reps "${BENCH_REPS:-5}" \
			-prefill 128 -decode "${GPU_DECODE:-128}" "${flags[@]}" \
			-models "$models/llama-1g-Q8_0.gguf,$models/llama-1g-Q4_K.gguf" 2>&1 | tee -a "$out/speed.txt" || status=1
	done
	# One CPU+GPU split against Halda's prediction: this device profiled with
	# its GPU, then Halda's plan for the Q4_K model with the VRAM it may use
	# capped at half the model (so it splits) and uncapped (all layers fit),
	# each plan's GPU layers run for real.
	m=$models/llama-1g-Q4_K.gguf
	.gpu/bin/homering profile --gpu-dir "$lib" --model "$m" --threads "$threads" --fresh >"$out/profile.txt" 2>&1 || status=1
	cat "$out/profile.txt"
	.gpu/bin/homering profile --gpu-dir "$lib" --model "$m" --threads "$threads" --json >/tmp/device.json || status=1
	for cap in 0.5 0; do
		python3 - /tmp/device.json "$m" "$cap" >"/tmp/device-$cap.json" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
if float(sys.argv[3]) > 0:
    d["vram_available_bytes"] = int(os.path.getsize(sys.argv[2]) * float(sys.argv[3]))
json.dump(d, sys.stdout)
PY
		.gpu/bin/homering plan --devices "/tmp/device-$cap.json" --model "$m" --rounds 1 --json >"/tmp/plan-$cap.json" || { status=1; continue; }
		n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ring"][0]["n"])' "/tmp/plan-$cap.json")
		pred=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["predicted_ms"])' "/tmp/plan-$cap.json")
		.gpu/bin/enginebench -gpu-dir "$lib" -no-check -gpu-layers "$n" -threads "$threads" -reps 5 -prefill 16 -decode 64 \
			-models "$m" >>"$out/split-runs.txt" 2>&1 || status=1
		meas=$(sed -n 's/.*decode \([0-9.]*\) vs .*/\1/p' "$out/split-runs.txt" | tail -1)
		python3 -c 'import sys; n,p,tps=sys.argv[1],float(sys.argv[2]),float(sys.argv[3]); m=1000/tps; print(f"split: VRAM cap {sys.argv[4]} of the model: Halda puts {n} of 36 layers on the GPU and predicts {p:.2f} ms per token; measured {m:.2f} ms (ours), measured/predicted {m/p:.2f}")' \
			"$n" "$pred" "${meas:-nan}" "$cap" | tee -a "$out/split.txt"
	done
	exit $status
	;;
*)
	echo "usage: bench/device/gpu-cuda.sh prepare|run" >&2
	exit 2
	;;
esac
