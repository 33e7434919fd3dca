#!/usr/bin/env bash
# Generates the random-weight GGUF test models into testdata/models/ (ignored
# by git) with `bin/homering gen-model` (engine/modelgen). Idempotent: a file
# that exists with the size its configuration produces and the current
# generator version and seed in its header is kept (--keep), so a second run
# takes about a second. Same flags, same seed: same bytes.
#
# Small models, one per family x type (F32 F16 Q8_0 Q4_0 Q4_K Q6_K), all with
# 4 layers, n_embd 256, vocab 1000, context_length 4096, seed 1:
#   llama-<T>.gguf    llama    ff 512, 4 heads / 2 KV heads, head_dim 64, rope base 1e4
#   mistral-<T>.gguf  "llama"  ff 768, 8 heads / 2 KV heads, head_dim 32, rope base 1e6,
#                              [INST] chat template (real Mistral GGUFs say llama too)
#   qwen2-<T>.gguf    qwen2    ff 512, 4 heads / 2 KV heads, head_dim 64, q/k/v biases,
#                              rope base 1e6 (NEOX), ChatML template
#   qwen3-<T>.gguf    qwen3    ff 512, 8 heads / 2 KV heads, head_dim 64 (q proj 256->512,
#                              so n_head*head_dim != n_embd), q/k norms, ChatML template
#   qwen3moe-<T>.gguf qwen3moe as qwen3, but each layer's FFN is 8 routed experts of ff 256,
#                              2 used per token (softmax top-2, weights normalised), router
#                              F32 with skewed logit scales (expert 0 picked most)
#   gemma3-<T>.gguf   gemma3   7 layers, ff 512, 4 heads / 2 KV heads, head_dim 128, q/k norms,
#                              post-norms, GELU FFN, tied head, sliding window 16 on layers
#                              0-4 and 6 (rope base 10000), layer 5 global (base 1e6, linear
#                              rope scaling 8), embeddings scaled by sqrt(256)
#   gemma2-<T>.gguf   gemma2   4 layers, as gemma3 without q/k norms, window 16 on even layers,
#                              attention soft-cap 50, final soft-cap 30
#   gemma3-softcap-F32.gguf    gemma3-F32 with final_logit_softcapping 5
#   phi3-<T>.gguf     phi3     ff 512, 4 heads / 2 KV heads, head_dim 64, fused attn_qkv and
#                              ffn_up (gate|up), LongRoPE factors (rope_factors_long/short)
#                              with original_context_length 128: llama.cpp's context (64,
#                              rounded up to 256) is longer, so both ropes use the long ones
#   phi3-short-F32.gguf        phi3-F32 with original_context_length 4096: the short factors
#   gpt-oss-<T>.gguf  gpt-oss  8 heads / 2 KV heads, head_dim 64 (q proj 256->512), q/k/v/o
#                              biases, attention sinks, sliding window 16 on even layers,
#                              8 experts of ff 256 with biases, 4 used per token (top-4 by
#                              biased router logits, softmax over those), swiglu-oai (expert
#                              gate/up N(0,16/fan_in): the clamp at 7 bites), YaRN x32
#   (F32 ~13 MB, Q4_K ~2 MB each)
# Every other quant type common in released GGUFs, one llama model each (as
# llama-F32, every 2-D weight in the type, as llama-quantize --pure writes):
#   llama-<T>.gguf for T in BF16 Q5_K Q3_K Q2_K Q5_0 IQ4_XS IQ4_NL IQ3_XXS IQ3_S
#                  IQ2_XXS IQ2_XS IQ1_S MXFP4 (IQ2_XXS, IQ2_XS and IQ1_S with a
#                  generated importance matrix: ggml refuses them without one)
# llama.cpp's mixes (engine/modelgen follows llama-quant.cpp's rules):
#   llama-Q4_K_M.gguf     head Q6_K; attn_v, ffn_down of layers 2, 3 Q6_K; rest Q4_K
#   gemma3-Q4_K_M.gguf    tied: token_embd Q6_K as the head; layers 2, 5, 6 Q6_K
#   qwen3moe-Q4_K_M.gguf  8 experts: attn_k, attn_v Q8_0, attn_output Q5_K,
#                         ffn_down_exps of layers 2, 3 Q6_K, rest Q4_K
#   qwen3moe-MXFP4_MOE.gguf  gpt-oss's layout: expert stacks MXFP4, the rest Q8_0
#   gpt-oss-MXFP4_MOE.gguf   gpt-oss in its released layout (the same rule)
# IQ2_XXS, IQ2_XS and IQ1_S take 2-13 s each, nearly all of it ggml building
# its codebook tables once per process (ggml_quantize_init); the rest < 1 s.
# Rope variants (llama, F32, otherwise as llama-F32):
#   llama-rope-freqs-F32.gguf   rope_freqs.weight [32] (Llama 3.1 factors), base 500000
#   llama-rope-linear-F32.gguf  rope.scaling.type=linear, rope.scaling.factor=4
# Other variants:
#   llama-mha-F32.gguf    4 heads / 4 KV heads (no GQA), otherwise as llama-F32
#   qwen2-tied-Q8_0.gguf  no output.weight: the head reuses token_embd (as Qwen2.5 0.5B)
# About 1 GB models for benchmarks (llama, n_embd 2048, 16 heads / 4 KV heads,
# ff 5632, vocab 32000):
#   llama-1g-Q8_0.gguf   16 layers   906,751,264 bytes (~4-6 s to generate)
#   llama-1g-Q4_K.gguf   36 layers   988,092,224 bytes (~7-8 s to generate)
# Every 2-D weight (token_embd and output too) has the file's type; norms,
# biases and rope_freqs are F32. The llama vocabulary is SentencePiece
# (tokenizer.ggml.model=llama): 0 <unk>, 1 <s> (bos), 2 </s> (eos),
# 3 <|im_start|>, 4 <|im_end|>, 5..260 byte tokens, then word pieces.
set -euo pipefail
cd "$(dirname "$0")/.."
. build/env.sh

out=testdata/models
mkdir -p "$out"
if [ ! -x bin/homering ]; then
	go build -o bin/homering .
fi

gen() { # FILE FLAGS...
	local file=$1
	shift
	bin/homering gen-model --keep --seed 1 --ctx 4096 "$@" -o "$out/$file" >/dev/null
}

start=$(date +%s)
for t in F32 F16 Q8_0 Q4_0 Q4_K Q6_K; do
	gen "llama-$t.gguf" --arch llama --layers 4 --embd 256 --ff 512 --heads 4 --kv-heads 2 --vocab 1000 --type "$t"
	gen "mistral-$t.gguf" --arch mistral --layers 4 --embd 256 --ff 768 --heads 8 --kv-heads 2 --vocab 1000 --type "$t"
	gen "qwen2-$t.gguf" --arch qwen2 --layers 4 --embd 256 --ff 512 --heads 4 --kv-heads 2 --vocab 1000 --type "$t"
	gen "qwen3-$t.gguf" --arch qwen3 --layers 4 --embd 256 --ff 512 --heads 8 --kv-heads 2 --head-dim 64 --vocab 1000 --type "$t"
	gen "qwen3moe-$t.gguf" --arch qwen3moe --layers 4 --embd 256 --ff 512 --heads 8 --kv-heads 2 --head-dim 64 --vocab 1000 --type "$t" --experts 8 --experts-used 2 --expert-ff 256
	gen "gemma3-$t.gguf" --arch gemma3 --layers 7 --embd 256 --ff 512 --heads 4 --kv-heads 2 --head-dim 128 --vocab 1000 --type "$t" --tied --sliding-window 16 --rope-scale-linear 8
	gen "phi3-$t.gguf" --arch phi3 --layers 4 --embd 256 --ff 512 --heads 4 --kv-heads 2 --vocab 1000 --type "$t"
	gen "gpt-oss-$t.gguf" --arch gpt-oss --layers 4 --embd 256 --ff 512 --heads 8 --kv-heads 2 --head-dim 64 --vocab 1000 --type "$t" --experts 8 --experts-used 4 --expert-ff 256
	gen "gemma2-$t.gguf" --arch gemma2 --layers 4 --embd 256 --ff 512 --heads 4 --kv-heads 2 --head-dim 128 --vocab 1000 --type "$t" --sliding-window 16
done
for t in BF16 Q5_K Q3_K Q2_K Q5_0 IQ4_XS IQ4_NL IQ3_XXS IQ3_S IQ2_XXS IQ2_XS IQ1_S MXFP4 Q4_K_M; do
	gen "llama-$t.gguf" --arch llama --layers 4 --embd 256 --ff 512 --heads 4 --kv-heads 2 --vocab 1000 --type "$t"
done
gen gemma3-Q4_K_M.gguf --arch gemma3 --layers 7 --embd 256 --ff 512 --heads 4 --kv-heads 2 --head-dim 128 --vocab 1000 --type Q4_K_M --tied --sliding-window 16 --rope-scale-linear 8
for t in Q4_K_M MXFP4_MOE; do
	gen "qwen3moe-$t.gguf" --arch qwen3moe --layers 4 --embd 256 --ff 512 --heads 8 --kv-heads 2 --head-dim 64 --vocab 1000 --type "$t" --experts 8 --experts-used 2 --expert-ff 256
done
gen gpt-oss-MXFP4_MOE.gguf --arch gpt-oss --layers 4 --embd 256 --ff 512 --heads 8 --kv-heads 2 --head-dim 64 --vocab 1000 --type MXFP4_MOE --experts 8 --experts-used 4 --expert-ff 256
gen phi3-short-F32.gguf --arch phi3 --layers 4 --embd 256 --ff 512 --heads 4 --kv-heads 2 --vocab 1000 --type F32 --rope-orig-ctx 4096
gen llama-rope-freqs-F32.gguf --arch llama --layers 4 --embd 256 --ff 512 --heads 4 --kv-heads 2 --vocab 1000 --type F32 --rope-freqs
gen llama-rope-linear-F32.gguf --arch llama --layers 4 --embd 256 --ff 512 --heads 4 --kv-heads 2 --vocab 1000 --type F32 --rope-scale-linear 4
gen gemma3-softcap-F32.gguf --arch gemma3 --layers 7 --embd 256 --ff 512 --heads 4 --kv-heads 2 --head-dim 128 --vocab 1000 --type F32 --tied --sliding-window 16 --rope-scale-linear 8 --final-softcap 5
gen llama-mha-F32.gguf --arch llama --layers 4 --embd 256 --ff 512 --heads 4 --kv-heads 4 --vocab 1000 --type F32
gen qwen2-tied-Q8_0.gguf --arch qwen2 --layers 4 --embd 256 --ff 512 --heads 4 --kv-heads 2 --vocab 1000 --type Q8_0 --tied
gen llama-1g-Q8_0.gguf --arch llama --layers 16 --embd 2048 --ff 5632 --heads 16 --kv-heads 4 --vocab 32000 --type Q8_0
gen llama-1g-Q4_K.gguf --arch llama --layers 36 --embd 2048 --ff 5632 --heads 16 --kv-heads 4 --vocab 32000 --type Q4_K
printf 'gen-models: %s ready in %ds\n' "$out" $(($(date +%s) - start)) >&2
