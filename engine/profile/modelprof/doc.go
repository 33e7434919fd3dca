// Package modelprof is the model profile Halda needs, from the GGUF alone
// (prima.cpp's model profiler, 000/001 A.3): halda.Model from engine/gguf's
// shape and per-layer layout. Pure: it reads the file's header through
// engine/gguf and computes; no cgo, no goroutines.
//
// Per layer: the bytes by weight type are the average over layers (b), and
// the FLOPs of one token are 2 per weight (a matrix-vector product) by type
// (f^q), plus attention over the planned context, 2·n_kv·(d_k+d_v) per head,
// charged to the F16 KV cache ("f16"). The input layer is the token
// embedding (b_i; one row of it is read per token); the output layer is the
// output norm and head (b_o, f_out^q), or the embedding when tied. KV bytes
// per token per layer are 2(h_k e_k + h_v e_v) for the F16 cache. n_kv is
// the configured context (default 4096, at most the trained context when
// defaulted). Compute buffers follow llama.cpp's sizing for a 512-token
// batch: 4 bytes × (vocab + 4·embd + 2·ffn) × batch on the CPU (it holds the
// logits), without the vocab on a GPU.
//
// Mixture of experts (qwen3moe, gpt-oss): a layer's bytes split into the
// always-read part (attention, router, norms; shared experts when a family
// has them) and the routed experts (gguf.Part.ExpertBytes); a token runs k
// of n experts, so the FLOPs count k/n of the experts' weights. The profile
// also carries what Halda plans a MoE model with (halda's package doc,
// "Mixture of experts"): the bytes a token reads, the hot set and the cold
// experts' read rate, from a measured routing histogram (FromShapeRouted)
// or, without one, uniform top-k/n routing, which Model.Routing says.
// A device keeps the histograms its ring jobs measure, per model (its
// header's hash), in its config directory (RoutingDir, LoadRouting,
// AddRouting: engine/ring/job writes them, the next job's prefetch and the
// agent's planner read them).
//
// Map keys are ggml's type names in lower case ("q4_k", "f16"), the keys
// engine/profile measures FLOPS for.
package modelprof
