// Package head is generation on the head device: tokenize, evaluate, sample,
// detokenize, stream tokens. For now it runs the whole model as one
// engine/ggml window [0, L) with the token embedding and the output head on
// this machine; the ring (windows on other devices) comes later behind the
// same Generate.
//
// Model. A Head owns a ggml.Model, one Window with Embed+Output, the model's
// llama.cpp vocabulary (engine/llama) and the tokens whose KV entries the
// window holds. Generate:
//
//  1. builds the prompt: Messages are formatted with the model's chat
//     template (ChatML when the GGUF has none) and opened for the assistant;
//     otherwise Prompt is used as is. The text is tokenized as llama-cli does
//     (BOS where the model adds it, special-token text parsed);
//  2. keeps the longest prefix of the cached tokens that the new prompt shares
//     (so a follow-up turn only evaluates what is new), truncates the KV cache
//     there and evaluates the rest in chunks of 512 tokens (llama.cpp's
//     micro-batch, so the logits stay llama.cpp's bits);
//  3. samples with engine/sample (seeded from Request.Seed; the prompt tokens
//     are fed to the repeat penalty first), evaluates each new token, and
//     emits one Token per sampled token until an end-of-generation token,
//     MaxTokens, the end of the context, ctx's cancellation or an emit error.
//
// Token text is UTF-8-safe: bytes of a character split across tokens are held
// back until the character is complete, and the last Token flushes whatever
// is left. An end-of-generation token is emitted with EOG set and no text of
// its own.
//
// A Head is not safe for concurrent use: one Generate at a time.
package head
