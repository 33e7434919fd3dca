// Package ggml is Homering's window engine: a small transformer forward pass
// written in C on ggml's C API (engine.c; ggml is compiled by cgo from the
// pinned github.com/ollama/ollama module) and driven from Go. It evaluates a
// window of layers [First, Last) of a GGUF model on a hidden state, which is
// what the ring needs and what llama.cpp cannot do.
//
// # Model
//
// Open validates the file in pure Go (engine/gguf: header, metadata, every
// tensor's byte range against the file size, the architecture's tensors and
// shapes; then this package's own checks of what ggml's kernels accept) and
// only then maps it read-only and shared (mmap PROT_READ, MAP_SHARED) and
// hands the tensor table to C. A malformed file is a Go error
// (ErrNotGGUF, ErrTruncated, ErrCorrupt, ErrBadModel); an architecture other
// than llama (incl. Mistral, which GGUF calls llama), qwen2, qwen3,
// qwen3moe, gemma2, gemma3, phi3 and gpt-oss is an *UnsupportedError
// ("architecture X is not supported yet"), never wrong numbers, and so is an
// expert_count on any architecture but qwen3moe and gpt-oss (Mixtral says
// llama).
//
// A file may be a weight slice (engine/slice): a GGUF holding only some
// layers, the input (token_embd) and/or the output (output_norm, output),
// with the source's tensor names, layer numbers and metadata, and
// homering.slice.* keys saying what it holds. Open checks the held parts'
// tensors only (engine/gguf Holding and CheckSliceTensors): a slice missing a
// tensor it claims, holding one it does not claim, or holding the output head
// of a tied model (no output.weight) without token_embd is ErrBadModel.
// ModelInfo reports Slice, HeldLayers, HasInput and HasOutput (a whole file
// holds [0, NLayer), input and output). NewWindow refuses a window whose
// layers, Embed or Output the file does not hold with a *NotHeldError
// (errors.Is ErrNotHeld and ErrBadWindow). A window over held parts computes
// the same bits as the same window on the whole file: the graph and the
// weights' bytes are the same, only their offsets in the file differ.
//
// A Window is layers [First, Last), optionally with the token embedding in
// front (Embed: input is tokens; needs First == 0) and output_norm + the
// output head behind (Output: the result is logits; needs Last == NLayer).
// Otherwise input and output are hidden states, F32 [n × NEmbd], row-major by
// token. Each window has its own KV cache (F16, one K and one transposed V
// tensor per layer, on the layer's device); positions must be evaluated in
// order (pos == KVLen()), at most MaxBatch (512, llama.cpp's n_ubatch) per
// call, and KVTruncate(pos) / KVClear forget the tail.
//
// # Exactness
//
// The graph is llama.cpp's, op for op (src/models/{llama,qwen2,qwen3,qwen3moe,gemma2-iswa,gemma3,phi3,openai-moe-iswa}.cpp
// and build_attn/build_ffn/build_moe_ffn/build_norm in src/llama-graph.cpp at
// the pinned version; a qwen3moe layer's FFN is the router's softmax, the
// top-k experts by argsort, their probabilities divided by their clamped sum,
// each expert's SwiGLU through ggml_mul_mat_id on the 3-D expert stacks, and
// the weighted outputs added in slot order; the stacks are only ever ggml's,
// never gemm.c's, whose kernels take 2-D weights; a gemma layer adds the
// post-norms, the Q scale before the product, the GELU-gated FFN, the
// embeddings scaled by sqrt(n_embd), the soft-caps, and sliding-window
// layers with a second mask (and gemma3's own rope base for them); a phi3
// layer takes Q, K and V as views of one fused product, its gate and up
// from one ffn_up (ggml_swiglu), Q scaled before the product, and the
// LongRoPE factors llama.cpp picks for the context (rope_factors_long when
// n_ctx rounded up to 256 exceeds original_context_length); a gpt-oss
// layer has q/k/v/o biases, attention sinks (ggml_soft_max_add_sinks),
// every other layer sliding, and a MoE FFN routed by the top-k biased
// logits with a softmax over those, expert biases (ggml_add_id) and
// swiglu-oai (alpha 1.702, clamp 7) between the stacks: the
// cache keeps every position in its own cell, so a sliding window is that
// mask alone, and truncating the cache or reusing a prefix needs nothing
// more): F16 KV cache written with set_rows, the non-flash attention path
// (mul_mat, soft_max_ext with an F32 causal mask, mul_mat with the transposed
// V), the cache size rounded up to 256 as llama.cpp does (the span attended
// over is padded to 32 cells, not llama.cpp's 256: masked cells add exact
// zeros, so the bits stay the same and short prompts attend over half as
// many cells), the same rope parameters (NEOX for qwen, the
// rope_freqs factors of Llama 3, linear and YaRN scaling), the same norm eps
// and attention scale, and the output rows selected with get_rows at the last
// layer. So the same ggml kernels see the same inputs: the logits equal
// llama.cpp's bit for bit (checked by engine/llama's tests), and a model split
// into windows [0,s) + [s,L), 0 <= s < L, gives bit-identical logits to the
// unsplit model. The one exception is an output head alone in a window
// [L,L): the unsplit graph runs the last layer's attention output and FFN on
// the output rows only (get_rows, as llama.cpp), the split one on all rows,
// and ggml's F32 matrix kernels round differently by batch size, so prompt
// logits of F32 models may differ in the last bits (decode steps do not).
// Keep the output head in the window that holds the last layer.
//
// # Prompt and token kernels
//
// Products with Q8_0, Q4_K and Q6_K weights run on this package's own matrix
// kernels (gemm.c), not ggml's: the same arithmetic, float step for float
// step, so the same bits (TestPromptKernelsMatchGGML), with each weight
// block unpacked once for several columns (prompts) or 4 rows computed per
// pass with the next 4 prefetched as one stream (decode steps), the
// accumulators in registers, and rows handed out to threads as they come
// free. Weights are still read in place from the mapping. They come in
// variants chosen at run time (kernels.go: AVX-512 VNNI, AVX2, ggml's own;
// HOMERING_KERNELS forces one); WindowParams.GGMLMatMul turns them off, for
// comparison (BenchmarkPromptKernels, BenchmarkTokenKernels, bench/engine.sh).
// A one-row attention (a decode step, or a row of a verification attending
// row by row) multiplies the F16 KV cache on attn.c's kernels of the same
// variant: ggml_vec_dot_f16's 8-lane order per output, each K and V row read
// once for all the query heads of its group (TestAttnKernelsMatchGGML); on
// a CPU backend built for AVX-512, whose F16 sums go 16 lanes wide, ggml's.
//
// Graphs depend only on the batch size and the padded KV length; positions,
// cells and the mask are inputs. A window keeps its last graph and the
// scheduler's allocation and reuses them when the shape repeats (every decode
// step within a 32-token stretch).
//
// # Invariants
//
//   - Weights of CPU layers are never copied: each tensor points into the
//     mapping (ggml_backend_cpu_buffer_from_ptr over the whole file, usage
//     WEIGHTS, ggml_backend_tensor_alloc per tensor). They are page cache the
//     kernel may evict and re-read; Release does that on purpose, Prefetch
//     brings a window's ranges back (MADV_POPULATE_READ, else MADV_WILLNEED in
//     4 MB chunks). A window touches only its own layers' pages.
//   - Layers listed in GPULayers get copies of their weights in GPU memory;
//     ggml_backend_sched runs each op where its weights live, never moving a
//     CPU layer's work to the GPU (op offload off: GraphSplits stays at 3 for
//     contiguous GPU layers). The cgo build has only ggml's CPU backend: GPU
//     devices appear after LoadBackends(dir) loads a backend library; without
//     one a non-empty GPULayers is ErrNoGPU. engine/gputest runs the GPU path
//     against the CPU on every CI run (Vulkan on Mesa's lavapipe).
//   - All windows of a Model share its mapping, its tensor table and one
//     persistent ggml thread pool (created by Open with one thread per CPU;
//     a window's Threads picks how many of them it uses).
//   - Thread safety: Model's methods are safe for concurrent use. Evaluations
//     of all windows of a model take turns on the model's lock (they share the
//     thread pool). A single Window must not be used from two goroutines at
//     once (its KV position is a sequence).
//   - Every argument that could make ggml assert (a token outside the
//     vocabulary, a hidden state of the wrong length, a position past NCtx or
//     out of order, a window outside the model) is a Go error first.
//
// # Memory
//
// A Window costs, in anonymous memory: its KV cache, 2 × (Last−First) ×
// NCtx' × NHeadKV × NEmbdHead × 2 bytes (NCtx' = NCtx rounded up to 256;
// KVBytes reports it), plus ggml's compute buffer, which grows to the largest
// batch evaluated (ComputeBytes; about n × (NFF + NVocab·[Output]) × 4 × a few
// bytes), plus a graph arena of about 100 KB per 8 layers. The weights add
// only file-backed, evictable page cache (RssFile), never anonymous memory.
package ggml
