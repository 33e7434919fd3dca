// Prompt-batch matrix products for weights read in place from the mapping.
//
// ggml multiplies a Q4_K, Q5_K or Q6_K weight matrix by a batch of n hidden
// states one (row, column) dot product at a time (ggml_vec_dot_q4_K_q8_K,
// _q5_K_q8_K, _q6_K_q8_K), unpacking the row's packed values and scales again
// for every column; for Q8_0 it
// hands the batch to llamafile's tinyBLAS, whose AVX2 tiles keep their
// accumulators on the stack. These kernels compute the same products with
// the same arithmetic, so every output is the same float, bit for bit (the
// integer parts of the dot products are exact whatever their order, and every
// float step -- the scale products, the per-lane FMAs, the horizontal sums --
// is done as ggml does it), but they unpack each weight block once for several
// columns and keep the accumulators in registers. The weights stay where they
// are: no repacking, so nothing is copied out of the page cache.
//
// A product is two graph nodes: one quantizes the batch (ggml's own
// from_float, so the same bytes ggml would make), shared by every product of
// the same input (Q, K and V; gate and up), and one multiplies. Each thread
// takes chunks of rows from a contiguous part of its own, by that part's
// counter, then from the other parts' counters, so its reads stay one
// stream and a thread that the OS preempts holds up nobody.
#ifndef HOMERING_GEMM_H
#define HOMERING_GEMM_H

#include "ggml.h"

// hr_gemm_supported says whether hr_mul_mat has a kernel for weights of this
// type under the CPU backend in use (x86-64 whose backend has AVX2 + FMA +
// F16C kernels; cpu.h).
int hr_gemm_supported(enum ggml_type type);

// hr_gemm_cache remembers the last quantized input, so that products of the
// same input share one quantization. Zero it before building a graph.
typedef struct {
	struct ggml_tensor *x, *q;
	enum ggml_type type;
	struct hr_gemm_node *node;
} hr_gemm_cache;

// hr_gemm_arena owns the per-node state of one graph's products (their
// schedulers); hr_gemm_arena_free releases it when the graph is dropped.
typedef struct hr_gemm_arena hr_gemm_arena;
void hr_gemm_arena_free(hr_gemm_arena **a);
// hr_gemm_products counts the products in the arena's graph that run on our
// kernels.
int hr_gemm_products(const hr_gemm_arena *a);

// The variants of our kernels, each giving the bits of the CPU backend in use
// (cpu.h) when it has AVX2 kernels: HR_KERNELS_GGML is ggml's own kernels
// (the baseline, and the only choice under a backend without AVX2);
// HR_KERNELS_AVX2 is AVX2 + FMA + F16C code; HR_KERNELS_AVX512 runs token
// steps (n <= 4) on AVX-512 F/BW/VL/VNNI code and prompts on the AVX2 code.
enum { HR_KERNELS_GGML = 1, HR_KERNELS_AVX2 = 2, HR_KERNELS_AVX512 = 3 };
// hr_kernels_runs says whether this CPU, under the CPU backend in use, can run
// the variant (CPUID, read once by the compiler's runtime).
int hr_kernels_runs(int kernels);

// hr_mul_mat is ggml_mul_mat(ctx, w, x), to be run by at most n_threads, for
// a 2-D weight w and a contiguous F32 batch x [k, n]: our kernels of the
// variant (HR_KERNELS_*) when w is in CPU memory, hr_gemm_supported(w->type)
// and hr_kernels_runs(kernels), else (or when out of memory for its state)
// ggml_mul_mat itself.
struct ggml_tensor *hr_mul_mat(struct ggml_context *ctx, hr_gemm_arena **arena, hr_gemm_cache *cache,
			       struct ggml_tensor *w, struct ggml_tensor *x, int n_threads, int kernels);

#endif
