// Package quant is ggml's own quantizers (ggml_quantize_chunk of the pinned
// ggml), with an importance matrix where a type needs one: the bytes
// llama-quantize writes for the same values. engine/modelgen writes its
// test models with it.
//
// It is a package of its own, not part of engine/ggml, because engine/ggml's
// tests generate models with engine/modelgen: modelgen importing engine/ggml
// would be an import cycle. It holds no state and starts nothing; ggml
// builds its i-quant codebooks once, on first use (ggml_quantize_init).
package quant
