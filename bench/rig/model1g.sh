# Sourced by the benchmarks that run agents on a ~1 GB model (bench/chaos.sh,
# bench/soak.sh): model_1g generates it once (a llama of 18 layers, n_embd
# 2048, Q8_0, 1.0 GB, in testdata/models/bench-chaos/, kept across runs) and
# prints its absolute path; gen-model's own line goes to stderr.
# shellcheck shell=bash
model_1g() {
	local model=$PWD/testdata/models/bench-chaos/llama-1g-Q8_0.gguf
	mkdir -p testdata/models/bench-chaos
	[ -x bin/homering ] || go build -o bin/homering .
	bin/homering gen-model --keep --seed 1 --ctx 4096 --arch llama --vocab 32000 --type Q8_0 \
		--layers 18 --embd 2048 --ff 5632 --heads 16 --kv-heads 4 -o "$model" >&2
	echo "$model"
}
