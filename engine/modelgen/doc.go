// Package modelgen writes GGUF files with random weights and a working
// SentencePiece vocabulary, for tests and benchmarks. Nothing it writes is a
// trained model; the files only have the exact layout llama.cpp (and our own
// engine) expect of the families Homering supports, so that two engines can be
// compared number for number on them.
//
// Families and what sets them apart (tensor names and shapes are llama.cpp's,
// see llama-model.cpp load_tensors at the pinned ollama version):
//
//	llama    general.architecture=llama; blk.N.{attn_norm,attn_q,attn_k,attn_v,
//	         attn_output,ffn_norm,ffn_gate,ffn_up,ffn_down}; optional
//	         rope_freqs.weight [rope_dims/2] F32 (Llama 3.1 style, with
//	         rope.freq_base 500000) and optional linear rope scaling keys.
//	mistral  the same tensors and architecture string "llama" (real Mistral
//	         GGUFs say llama too), rope.freq_base 1e6 and a [INST] chat template.
//	qwen2    general.architecture=qwen2; adds blk.N.attn_{q,k,v}.bias F32; NEOX
//	         rope is implied by the architecture; head_dim = embd/heads; ChatML.
//	qwen3    general.architecture=qwen3; adds blk.N.attn_{q,k}_norm.weight
//	         [head_dim] F32; head_dim may differ from embd/heads (the
//	         attention.key_length and value_length keys are always written).
//	gemma3   general.architecture=gemma3; as qwen3's attention (q/k norms,
//	         head_dim free) plus blk.N.post_attention_norm and post_ffw_norm
//	         [embd] F32, attention.sliding_window (Config.SlidingWindow, 16),
//	         rope.freq_base 1e6 (llama.cpp ropes the sliding layers at
//	         10000), final_logit_softcapping when Config.FinalSoftcap > 0,
//	         a Gemma turn template.
//	gemma2   as gemma3 without q/k norms, rope.freq_base 10000, soft-caps
//	         attn_logit_softcapping 50 and final_logit_softcapping 30 (or
//	         FinalSoftcap), always a tied head (llama.cpp reads no
//	         output.weight for gemma2).
//	qwen3moe as qwen3, but each layer's FFN is Config.Experts (8) routed
//	         experts: blk.N.ffn_gate_inp.weight [embd, experts] (the router,
//	         always F32 as llama.cpp's quantizer leaves it) and
//	         blk.N.ffn_{gate,up,down}_exps.weight, 3-D [.., .., experts], with
//	         expert_count, expert_used_count (2) and
//	         expert_feed_forward_length (ff/used) keys. Router row j has
//	         standard deviation 4·0.75^j/sqrt(embd): expert 0 wins the top-k
//	         about 3.6 times as often as expert 7 (TestRouterIsSkewed), as
//	         real routers are skewed, and the softmax is peaky enough that
//	         the normalised weights differ from token to token.
//	phi3     general.architecture=phi3; blk.N.attn_qkv.weight [embd, q+2kv]
//	         and blk.N.ffn_up.weight [embd, 2ff] (gate|up) as every phi3
//	         GGUF fuses them, rope_factors_long/short.weight [head_dim/2]
//	         (LongRoPE, F32), rope.scaling.original_context_length
//	         (RopeOrigCtx, default ctx/32) and Phi-3's
//	         rope.scaling.attn_factor; Phi-3's control tokens
//	         (<|endoftext|>, <|end|>, ...) end the vocabulary, as llama.cpp's
//	         vocab loader looks them up in a model named phi3.
//	gpt-oss  general.architecture=gpt-oss; as qwen3moe's experts (8, 2
//	         used by default) plus q/k/v/o biases, blk.N.attn_sinks.weight
//	         [heads], the router's and each expert stack's biases (F32,
//	         2-D for the stacks), post_attention_norm as the FFN norm,
//	         attention.sliding_window (16: even layers slide), YaRN rope
//	         (factor 32 over 4096, base 150000) as gpt-oss-20b; expert
//	         gate/up weights N(0, 16/fan_in) so swiglu-oai's clamp at 7
//	         is reached.
//
// Variants: Config.TiedOutput leaves out output.weight (the head reuses
// token_embd.weight, as small Llama 3.2 and Qwen2.5 models do).
//
// Tensor types (Types): F32, F16, BF16, Q8_0, Q6_K, Q5_K, Q4_K, Q3_K, Q2_K,
// Q5_0, Q4_0, IQ4_XS, IQ4_NL, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ1_S and
// MXFP4 give every 2-D weight (token_embd, output and all projection
// matrices) and 3-D expert stack that type (not the MoE router), as
// llama-quantize --pure does; 1-D tensors (norms, biases, rope_freqs) are
// F32, as llama.cpp's converter writes them. Two of llama.cpp's mixes follow
// llama-quant.cpp's per-tensor rules (q4KMType says which it leaves out):
// Q4_K_M (head Q6_K; attn_v and ffn_down Q6_K in use_more_bits layers; with
// 8 experts attn_k/attn_v Q8_0 and attn_output Q5_K; the rest Q4_K) and
// MXFP4_MOE (gpt-oss's: expert stacks MXFP4, the rest Q8_0). K- and
// i-quants need rows that are a multiple of 256 elements (IQ4_NL, MXFP4,
// Q4_0, Q5_0 and Q8_0 32); Generate refuses shapes that do not fit instead of
// silently changing a tensor's type.
//
// Weights: each tensor draws from its own PCG stream seeded by (Config.Seed,
// FNV-1a of the tensor name), so a file is a pure function of its Config and
// tensors may be written in parallel in any order. Linear weights are
// N(0, 1/fan_in) so that activations keep unit scale through the layers;
// token embeddings N(0, 1) (N(0, 4/embd) when tied to the head); the output
// head N(0, 4/embd) (logits of standard
// deviation ~2, so that greedy decoding has clear winners); norm weights
// 1 + N(0, 0.1²); biases N(0, 0.1²). Quantization uses ggml's own quantizers
// (engine/ggml/quant: ggml_quantize_chunk) so that the bytes are exactly what
// llama-quantize would write for the same F32 values. IQ2_XXS, IQ2_XS and
// IQ1_S, which ggml (and llama-quantize) refuse without an importance
// matrix, get a generated one per tensor (positive, log-normal across input
// columns; see importance); the other types none. Quantized tensors of
// more than 2^18 values (the ~1 GB benchmark models' and MoE expert stacks) are
// assembled instead from blocks drawn at random from a pool of 2^22 values
// quantized once per distribution: ggml's K-quantizers take ~130 ns per value
// here, minutes for a 1 GB Q4_K model, and every block is self-contained, so
// the result is an equally valid random tensor in seconds.
//
// FileSize predicts the exact size Generate writes (GGUF v3 as ollama's
// fs/ggml.WriteGGUF lays it out: keys sorted, tensors ordered by block then
// name, data padded to 32 bytes), so set-up can keep complete files.
//
// Vocabulary (tokenizer.ggml.model=llama): 0 <unk>, 1 <s>, 2 </s>, 3
// <|im_start|>, 4 <|im_end|> (control), then the 256 byte tokens <0x00>..<0xFF>,
// then single characters, common English words with their "▁" prefixes (every
// prefix of a word is a piece too, so SentencePiece merges can reach it), letter
// bigrams and trigrams, and finally <pad_N> pieces up to the requested size.
// Scores fall with the index, as in SentencePiece models.
package modelgen
