// See attn.h.
#include "attn.h"

#include <stdint.h>

#include "cpu.h"
#include "gemm.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

// As gemm.c: AVX2 + FMA + F16C code, compiled by GCC's target pragma in a
// baseline build and run only where the CPU backend has AVX2 kernels.
#if defined(__x86_64__) && defined(__GNUC__)
#define HR_ATTN 1
#if !(defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
#define HR_ATTN_PRAGMA 1
#endif
#include <immintrin.h>
#endif

#ifdef HR_ATTN
#ifdef HR_ATTN_PRAGMA
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

// Cache rows per unit of work: threads take runs of units of one KV head.
#define HR_ATTN_ROWS 16
// Elements per step of ggml's F16 dot product (GGML_F16_STEP: GGML_F16_ARR
// = 4 accumulators of GGML_F16_EPR lanes): 8 lanes on its AVX path, 16 on
// its AVX-512 one.
#define HR_F16_STEP 32
#define HR_F16_STEP16 64

// convert_op: each row of b ([k, 1, heads]) as ggml's mul_mat converts it
// (its own from_float to F16, so the same halves), widened back to F32
// (exactly) so that the products load it as it is.
static void convert_op(struct ggml_tensor *dst, int ith, int nth, void *ud) {
	(void)ud;
	const struct ggml_tensor *b = dst->src[0];
	const ggml_from_float_t from_float = hr_cpu_traits(GGML_TYPE_F16)->from_float;
	const int64_t k = b->ne[0];
	ggml_fp16_t tmp[256];
	for (int64_t h = ith; h < b->ne[2]; h += nth) {
		const float *x = (const float *)((const char *)b->data + h * b->nb[2]);
		float *y = (float *)((char *)dst->data + h * dst->nb[1]);
		for (int64_t c = 0; c < k; c += 256) {
			const int64_t len = k - c < 256 ? k - c : 256;
			from_float(x + c, tmp, len);
			int64_t i = 0;
			for (; i + 8 <= len; i += 8) {
				_mm256_storeu_ps(y + c + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(tmp + i))));
			}
			for (; i < len; i++) {
				y[c + i] = _cvtsh_ss(tmp[i]);
			}
		}
	}
}

// dots_leftover: the outputs' sums res[o] of the whole steps, then the
// elements past the last step added in double, as ggml_vec_dot_f16's
// leftover loop (each output's terms in order; the outputs interleaved, so
// their chains of double adds overlap). Output o is row o % nr against
// vector o / nr.
static inline __attribute__((always_inline)) void dots_leftover(const float *res, const int no, const int nr,
								const char *a, size_t as, const float *b, int64_t bs,
								int64_t np, int64_t n, float *out, size_t os) {
	double sumf[8];
	_Pragma("GCC unroll 8")
	for (int o = 0; o < no; o++) {
		sumf[o] = res[o];
	}
	for (int64_t i = np; i < n; i++) {
		_Pragma("GCC unroll 8")
		for (int o = 0; o < no; o++) {
			const uint16_t *x = (const uint16_t *)(a + o % nr * as);
			sumf[o] += (double)(_cvtsh_ss(x[i]) * b[o / nr * bs + i]);
		}
	}
	_Pragma("GCC unroll 8")
	for (int o = 0; o < no; o++) {
		out[o / nr * os + o % nr] = (float)sumf[o];
	}
}

// dots_finish: the outputs whose partial sums t[o] (the accumulators summed
// down to 4 lanes: GGML_F32x8_REDUCE's t0) are ready: ggml's two hadds, done
// for 4 outputs at once (hadd(hadd(t0, t1), hadd(t2, t3)) sums each t in the
// same pairs as hadd(hadd(t, t), hadd(t, t))), then dots_leftover.
static inline __attribute__((always_inline)) void dots_finish(const __m128 *t, const int no, const int nr,
							      const char *a, size_t as, const float *b, int64_t bs,
							      int64_t np, int64_t n, float *out, size_t os) {
	float res[8];
	_Pragma("GCC unroll 2")
	for (int o = 0; o < no; o += 4) {
		const __m128 z = _mm_setzero_ps();
		const __m128 h01 = _mm_hadd_ps(t[o], o + 1 < no ? t[o + 1] : z);
		const __m128 h23 = _mm_hadd_ps(o + 2 < no ? t[o + 2] : z, o + 3 < no ? t[o + 3] : z);
		_mm_storeu_ps(res + o, _mm_hadd_ps(h01, h23));
	}
	dots_leftover(res, no, nr, a, as, b, bs, np, n, out, os);
}

// dots_avx2: nr (<= 2) F16 rows a + r*as against nh (<= 4) F32 vectors
// b + h*bs of n elements, into out[h*os + r]: per output ggml's 4
// accumulators of 8 lanes, each row's halves widened once for all vectors.
static inline __attribute__((always_inline)) void dots_avx2(const char *a, size_t as, const float *b, int64_t bs,
							    int64_t n, const int nr, const int nh, float *out,
							    size_t os) {
	__m256 acc[4][2][4];
	_Pragma("GCC unroll 4")
	for (int h = 0; h < nh; h++) {
		_Pragma("GCC unroll 2")
		for (int r = 0; r < nr; r++) {
			_Pragma("GCC unroll 4")
			for (int j = 0; j < 4; j++) {
				acc[h][r][j] = _mm256_setzero_ps();
			}
		}
	}
	const int64_t np = n & ~(int64_t)(HR_F16_STEP - 1);
	for (int64_t i = 0; i < np; i += HR_F16_STEP) {
		_Pragma("GCC unroll 2")
		for (int r = 0; r < nr; r++) {
			_Pragma("GCC unroll 4")
			for (int j = 0; j < 4; j++) {
				const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(a + r * as + 2 * (i + 8 * j))));
				_Pragma("GCC unroll 4")
				for (int h = 0; h < nh; h++) {
					acc[h][r][j] = _mm256_fmadd_ps(x, _mm256_loadu_ps(b + h * bs + i + 8 * j), acc[h][r][j]);
				}
			}
		}
	}
	__m128 t[8];
	_Pragma("GCC unroll 4")
	for (int h = 0; h < nh; h++) {
		_Pragma("GCC unroll 2")
		for (int r = 0; r < nr; r++) {
			// GGML_F32x8_REDUCE: x0 += x2, x1 += x3, x0 += x1, then the halves.
			const __m256 x = _mm256_add_ps(_mm256_add_ps(acc[h][r][0], acc[h][r][2]),
						       _mm256_add_ps(acc[h][r][1], acc[h][r][3]));
			t[h * nr + r] = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
		}
	}
	dots_finish(t, nh * nr, nr, a, as, b, bs, np, n, out, os);
}

#define HR_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))

// dots_avx512: dots_avx2 with an output's accumulators 0 and 1 in one
// 512-bit register and 2 and 3 in another (the same lanes: 16 consecutive
// elements are accumulator 0's 8 then 1's), so x0 + x2 and x1 + x3 are one
// add.
HR_AVX512 static inline __attribute__((always_inline)) void dots_avx512(const char *a, size_t as, const float *b,
									 int64_t bs, int64_t n, const int nr,
									 const int nh, float *out, size_t os) {
	__m512 acc[4][2][2];
	_Pragma("GCC unroll 4")
	for (int h = 0; h < nh; h++) {
		_Pragma("GCC unroll 2")
		for (int r = 0; r < nr; r++) {
			acc[h][r][0] = _mm512_setzero_ps();
			acc[h][r][1] = _mm512_setzero_ps();
		}
	}
	const int64_t np = n & ~(int64_t)(HR_F16_STEP - 1);
	for (int64_t i = 0; i < np; i += HR_F16_STEP) {
		_Pragma("GCC unroll 2")
		for (int r = 0; r < nr; r++) {
			const char *ar = a + r * as + 2 * i;
			const __m512 x0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)ar));
			const __m512 x1 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(ar + 32)));
			_Pragma("GCC unroll 4")
			for (int h = 0; h < nh; h++) {
				acc[h][r][0] = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b + h * bs + i), acc[h][r][0]);
				acc[h][r][1] = _mm512_fmadd_ps(x1, _mm512_loadu_ps(b + h * bs + i + 16), acc[h][r][1]);
			}
		}
	}
	__m128 t[8];
	_Pragma("GCC unroll 4")
	for (int h = 0; h < nh; h++) {
		_Pragma("GCC unroll 2")
		for (int r = 0; r < nr; r++) {
			const __m512 s = _mm512_add_ps(acc[h][r][0], acc[h][r][1]);
			const __m256 x = _mm256_add_ps(_mm512_castps512_ps256(s),
						       _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
			t[h * nr + r] = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
		}
	}
	dots_finish(t, nh * nr, nr, a, as, b, bs, np, n, out, os);
}

// dots16_avx512: one F16 row against nh (<= 4) vectors as the AVX-512 build
// of ggml_vec_dot_f16 (a CPU backend built for AVX-512 F: the icelake
// variant) sums: 4 accumulators of 16 lanes over steps of 64, x0 + x2 and
// x1 + x3 summed, then GCC's _mm512_reduce_add_ps: the 256-bit halves, the
// 128-bit halves, then lanes (0 + 2) + (1 + 3), done for 4 outputs at once
// by a transpose.
HR_AVX512 static inline __attribute__((always_inline)) void dots16_avx512(const char *a, size_t as, const float *b,
									   int64_t bs, int64_t n, const int nr,
									   const int nh, float *out, size_t os) {
	(void)nr;
	__m512 acc[4][4];
	_Pragma("GCC unroll 4")
	for (int h = 0; h < nh; h++) {
		_Pragma("GCC unroll 4")
		for (int j = 0; j < 4; j++) {
			acc[h][j] = _mm512_setzero_ps();
		}
	}
	const int64_t np = n & ~(int64_t)(HR_F16_STEP16 - 1);
	for (int64_t i = 0; i < np; i += HR_F16_STEP16) {
		// One row a pass leaves the memory idle between its loads: ask
		// for the row 2 ahead (its step's 128 bytes) meanwhile.
		_mm_prefetch(a + 2 * as + 2 * i, _MM_HINT_T0);
		_mm_prefetch(a + 2 * as + 2 * i + 64, _MM_HINT_T0);
		_Pragma("GCC unroll 4")
		for (int j = 0; j < 4; j++) {
			const __m512 x = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(a + 2 * (i + 16 * j))));
			_Pragma("GCC unroll 4")
			for (int h = 0; h < nh; h++) {
				acc[h][j] = _mm512_fmadd_ps(x, _mm512_loadu_ps(b + h * bs + i + 16 * j), acc[h][j]);
			}
		}
	}
	__m128 t[4];
	_Pragma("GCC unroll 4")
	for (int h = 0; h < 4; h++) {
		if (h >= nh) {
			t[h] = _mm_setzero_ps();
			continue;
		}
		const __m512 s = _mm512_add_ps(_mm512_add_ps(acc[h][0], acc[h][2]), _mm512_add_ps(acc[h][1], acc[h][3]));
		const __m256 x = _mm256_add_ps(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)),
					       _mm512_castps512_ps256(s));
		t[h] = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
	}
	_MM_TRANSPOSE4_PS(t[0], t[1], t[2], t[3]);
	const __m128 res = _mm_add_ps(_mm_add_ps(t[0], t[2]), _mm_add_ps(t[1], t[3]));
	// The leftover elements (32 in every other span of cells: the cache
	// is padded to 32) in double, as dots_leftover, the 4 outputs' sums in
	// the lanes of one register: 4 elements of the 4 vectors transposed
	// into a register each, times the row's element (exact in F32), widened
	// and added in order.
	__m256d sum = _mm256_cvtps_pd(res);
	const float *bh[4];
	_Pragma("GCC unroll 4")
	for (int h = 0; h < 4; h++) {
		bh[h] = b + (h < nh ? h : 0) * bs;
	}
	const uint16_t *x = (const uint16_t *)a;
	int64_t i = np;
	for (; i + 4 <= n; i += 4) {
		__m128 y0 = _mm_loadu_ps(bh[0] + i), y1 = _mm_loadu_ps(bh[1] + i), y2 = _mm_loadu_ps(bh[2] + i),
		       y3 = _mm_loadu_ps(bh[3] + i);
		_MM_TRANSPOSE4_PS(y0, y1, y2, y3);
		const __m128 xv = _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)(x + i)));
		sum = _mm256_add_pd(sum, _mm256_cvtps_pd(_mm_mul_ps(_mm_shuffle_ps(xv, xv, 0x00), y0)));
		sum = _mm256_add_pd(sum, _mm256_cvtps_pd(_mm_mul_ps(_mm_shuffle_ps(xv, xv, 0x55), y1)));
		sum = _mm256_add_pd(sum, _mm256_cvtps_pd(_mm_mul_ps(_mm_shuffle_ps(xv, xv, 0xAA), y2)));
		sum = _mm256_add_pd(sum, _mm256_cvtps_pd(_mm_mul_ps(_mm_shuffle_ps(xv, xv, 0xFF), y3)));
	}
	for (; i < n; i++) {
		const __m128 y = _mm_set_ps(bh[3][i], bh[2][i], bh[1][i], bh[0][i]);
		sum = _mm256_add_pd(sum, _mm256_cvtps_pd(_mm_mul_ps(_mm_set1_ps(_cvtsh_ss(x[i])), y)));
	}
	float r[4];
	_mm_storeu_ps(r, _mm256_cvtpd_ps(sum));
	_Pragma("GCC unroll 4")
	for (int h = 0; h < nh; h++) {
		out[h * os] = r[h];
	}
}

// DOTS_NH: kern of nr rows against nh (1..4, a constant in each case) vectors.
#define DOTS_NH(kern, nr)                                                                                              \
	switch (nh) {                                                                                                  \
	case 1: kern(ar, as, bh, bs, n, nr, 1, o, os); break;                                                          \
	case 2: kern(ar, as, bh, bs, n, nr, 2, o, os); break;                                                          \
	case 3: kern(ar, as, bh, bs, n, nr, 3, o, os); break;                                                          \
	default: kern(ar, as, bh, bs, n, nr, 4, o, os); break;                                                         \
	}

// DOT_OP: the product's op: units of HR_ATTN_ROWS rows of one KV head's rows
// (src0: K [k, n_kv, heads_kv] or V [n_kv, k, heads_kv], F16) against the
// heads of its group (src1: convert_op's rows, one per query head; head h
// reads KV head h / (heads / heads_kv), as ggml's broadcast), each thread a
// contiguous run of units; NR rows and NH heads a pass, as many accumulators
// as fit in the registers (AVX2: 16, AVX-512: 32).
#define DOT_OP(name, attr, kern, NR, NH)                                                                               \
	attr static void name(struct ggml_tensor *dst, int ith, int nth, void *ud) {                                   \
		(void)ud;                                                                                              \
		const struct ggml_tensor *a = dst->src[0], *bx = dst->src[1];                                          \
		const int64_t n = a->ne[0], rows = a->ne[1], chunks = (rows + HR_ATTN_ROWS - 1) / HR_ATTN_ROWS;        \
		const int r2 = (int)(bx->ne[1] / a->ne[2]);                                                            \
		const size_t as = a->nb[1], os = dst->nb[2] / sizeof(float);                                           \
		const int64_t bs = bx->nb[1] / (int64_t)sizeof(float), units = chunks * a->ne[2];                      \
		for (int64_t u = units * ith / nth; u < units * (ith + 1) / nth; u++) {                                \
			const int64_t g = u / chunks, r0 = u % chunks * HR_ATTN_ROWS;                                  \
			const int64_t r1 = r0 + HR_ATTN_ROWS < rows ? r0 + HR_ATTN_ROWS : rows;                        \
			for (int64_t r = r0, nr = NR; r < r1; r += nr) {                                               \
				nr = r1 - r >= NR ? NR : 1;                                                            \
				const char *ar = (const char *)a->data + g * a->nb[2] + r * as;                        \
				for (int h = 0; h < r2; h += NH) {                                                     \
					const int nh = r2 - h < NH ? r2 - h : NH;                                      \
					const float *bh = (const float *)bx->data + (g * r2 + h) * bs;                 \
					float *o = (float *)dst->data + (g * r2 + h) * (int64_t)os + r;                \
					if (nr == NR) {                                                                \
						DOTS_NH(kern, NR);                                                     \
					} else {                                                                       \
						DOTS_NH(kern, 1);                                                      \
					}                                                                              \
				}                                                                                      \
			}                                                                                              \
		}                                                                                                      \
	}

DOT_OP(dot_op_avx2, , dots_avx2, 1, 2)
DOT_OP(dot_op_avx512, HR_AVX512, dots_avx512, 2, 4)
DOT_OP(dot16_op_avx512, HR_AVX512, dots16_avx512, 1, 4)

static struct ggml_tensor *attn_mul_mat(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
					int kernels, int *ours) {
	// The kernels read a->data: a cache in a GPU's memory is ggml's. A
	// backend built for AVX-512 sums 16 lanes: only the AVX-512 variant
	// has that order's kernel.
	const struct ggml_tensor *base = a->view_src ? a->view_src : a;
	const int wide = hr_cpu_avx512();
	if (kernels == HR_KERNELS_GGML || !hr_kernels_runs(kernels) || !hr_cpu_avx2() ||
	    (wide && kernels != HR_KERNELS_AVX512) ||
	    !base->buffer || !ggml_backend_buffer_is_host(base->buffer) || a->type != GGML_TYPE_F16 ||
	    b->type != GGML_TYPE_F32 || a->nb[0] != sizeof(ggml_fp16_t) || b->nb[0] != sizeof(float) ||
	    a->ne[0] != b->ne[0] || b->ne[1] != 1 || a->ne[3] != 1 || b->ne[3] != 1 || b->ne[2] % a->ne[2] != 0) {
		return ggml_mul_mat(ctx, a, b);
	}
	struct ggml_tensor *args[2] = {b, NULL};
	struct ggml_tensor *bx =
	    ggml_custom_4d(ctx, GGML_TYPE_F32, b->ne[0], b->ne[2], 1, 1, args, 1, convert_op, GGML_N_TASKS_MAX, NULL);
	args[0] = a;
	args[1] = bx;
	(*ours)++;
	return ggml_custom_4d(ctx, GGML_TYPE_F32, a->ne[1], 1, b->ne[2], 1, args, 2,
			      wide ? dot16_op_avx512 : kernels == HR_KERNELS_AVX512 ? dot_op_avx512 : dot_op_avx2,
			      GGML_N_TASKS_MAX, NULL);
}

#ifdef HR_ATTN_PRAGMA
#pragma GCC pop_options
#endif

struct ggml_tensor *hr_attn_mul_mat(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
				    int kernels, int *ours) {
	return attn_mul_mat(ctx, a, b, kernels, ours);
}

#else // not x86-64: ggml's kernels

struct ggml_tensor *hr_attn_mul_mat(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
				    int kernels, int *ours) {
	(void)kernels;
	(void)ours;
	return ggml_mul_mat(ctx, a, b);
}

#endif
