// The attention's two products over the F16 KV cache in token steps.
//
// A one-row attention (a decode step, or one row of a speculative
// verification attending row by row) multiplies the F16 K cache by q (kq)
// and the transposed F16 V cache by the softmax of kq (kqv). ggml converts
// the F32 operand to F16 (ggml_cpu_fp32_to_fp16) and calls
// ggml_vec_dot_f16 once per (cache row, query head): under grouped-query
// attention each K and V row is read once per head of its group, and at a
// head size of 128 the call and the horizontal sum of every dot product cost
// as much as its multiply-adds. These kernels compute every output with
// ggml's arithmetic (the AVX path of its F16 macros: 4 accumulators of 8
// lanes over steps of 32, products exact in F32, the accumulators summed in
// pairs and by hadd, the leftover elements added in double), so the bits are
// the same, but read each cache row once for all the heads of its group and
// sum several outputs' lanes with the same hadds. A CPU backend built for
// AVX-512 (the icelake variant) sums 16 lanes over steps of 64 and reduces
// them by _mm512_reduce_add_ps: the AVX-512 variant of our kernels has that
// order too.
#ifndef HOMERING_ATTN_H
#define HOMERING_ATTN_H

#include "ggml.h"

// hr_attn_mul_mat is ggml_mul_mat(ctx, a, b) for a, a view of an F16 KV cache
// in CPU memory, and b, one F32 row per query head (ne[1] = 1): our kernels
// of the variant (HR_KERNELS_AVX2 or _AVX512, gemm.h) when this CPU runs it
// under the CPU backend in use (cpu.h) and it has that backend's order (an
// AVX-512 backend's: HR_KERNELS_AVX512 only); else ggml_mul_mat itself.
// *ours counts the products built on our kernels.
struct ggml_tensor *hr_attn_mul_mat(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
				    int kernels, int *ours);

#endif
