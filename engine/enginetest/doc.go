// Package enginetest holds only tests: it proves that Homering's window engine
// (engine/ggml) computes what llama.cpp computes, using llama.cpp itself
// (engine/llama's Reference, the pinned github.com/ollama/ollama/llama) as
// the oracle. It has no code of its own and nothing imports it.
//
// What the tests hold the engine to:
//
//   - Logits: on stories260K (a real trained llama) and on every generated
//     random-weight model in testdata/models (llama, mistral, qwen2, qwen3,
//     qwen3moe (8 routed experts, top-2), gemma2 and gemma3 (sliding window
//     16, so the prompt and decode steps slide past it), phi3 (fused QKV
//     and gate/up, long LongRoPE factors; phi3-short-F32 the short ones)
//     and gpt-oss (sinks, sliding window 16, 8 experts top-4 with biases,
//     swiglu-oai) in
//     F32, F16, Q8_0, Q4_0, Q4_K, Q6_K, plus llama with rope_freqs and with
//     linear rope scaling, and gemma3 with a final soft-cap), the logits of every token of a 32-token prompt and
//     of 16 greedy decode steps agree with llama.cpp's to
//     max |Δ| <= 1e-4 × max |logit|. Bit-identical is the target; each model's
//     max |Δ| is logged (go test -v) so it can be quoted. Every other quant
//     type common in released GGUFs (BF16, Q5_K, Q3_K, Q2_K, Q5_0, IQ4_XS,
//     IQ4_NL, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ1_S, MXFP4, on llama) and
//     llama.cpp's mixes (Q4_K_M on llama, gemma3 and qwen3moe; MXFP4_MOE on
//     qwen3moe and gpt-oss) must be bit-identical.
//   - Generation: the greedy 64-token continuation of "Once upon a time" on
//     stories260K by engine/head equals llama.cpp's, token for token.
//   - Tokens: the vocab-only load engine/head uses tokenizes a corpus
//     (whitespace, numbers, unicode, special-token text) exactly as the full
//     llama.cpp model does, for every tokenizer family.
//
// The generated models come from build/gen-models.sh (build/setup.sh runs it);
// a missing model is a test failure, not a skip.
package enginetest
