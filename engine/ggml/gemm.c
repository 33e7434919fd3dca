// See gemm.h.
#include "gemm.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#ifdef _WIN32
#include <malloc.h>
#endif
#include "ggml-backend.h"
#include "ggml-cpu.h"

// The kernels are AVX2 + FMA + F16C code. A build for that ISA (build/env.sh
// on such a CPU) compiles them as they are; a baseline x86-64 build (the
// release's, HOMERING_PORTABLE=1) compiles them for that ISA by GCC's target
// pragma and runs them only where the CPU backend in use (cpu.h) has AVX2
// kernels too: they make ggml's AVX2 bits, so under a baseline variant
// ggml's own kernels run instead, and the logits stay that variant's.
#if defined(__x86_64__) && defined(__GNUC__)
#define HR_GEMM 1
#if !(defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
#define HR_GEMM_PRAGMA 1
#endif
#include <immintrin.h>
#endif

// The block layouts of the GGUF format (ggml-common.h), asserted against
// ggml's sizes in hr_gemm_supported.
typedef struct {
	uint16_t d;
	int8_t qs[32];
} hr_block_q8_0;

typedef struct {
	uint16_t d, dmin;
	uint8_t scales[12];
	uint8_t qs[128];
} hr_block_q4_K;

typedef struct {
	uint16_t d, dmin;
	uint8_t scales[12];
	uint8_t qh[32];
	uint8_t qs[128];
} hr_block_q5_K;

typedef struct {
	uint8_t ql[128];
	uint8_t qh[64];
	int8_t scales[16];
	uint16_t d;
} hr_block_q6_K;

typedef struct {
	float d;
	int8_t qs[256];
	int16_t bsums[16];
} hr_block_q8_K;

// A product's chunks of rows are split into parts, contiguous runs of
// chunks, one a thread (at most HR_MAX_PARTS): thread t takes part t's
// chunks front to back, then helps the next parts. Chunks handed out
// round-robin left each thread a 16-row run followed by a jump: its stream
// prefetches (hardware, and the kernels' of the next rows) ran into the
// other thread's rows and every chunk began cold, so two threads decoded no
// faster than one (issue 22). Each part's counter has a cache line of its own.
#define HR_MAX_PARTS 16
typedef struct {
	_Alignas(64) atomic_int next; // the next chunk of the part to take
} hr_part;

// One product's or one quantization's state. A quantization resets the
// counters of the products that read it: every node is followed by a barrier
// of all threads, so the reset is seen before any thread takes a chunk.
typedef struct hr_gemm_node {
	hr_part part[HR_MAX_PARTS];  // product: its parts' counters
	int parts;                   // product: parts this step (set at the reset)
	int64_t chunks;              // product: chunks of HR_CHUNK_ROWS rows
	struct hr_gemm_node *quant; // product: the quantization it reads
	// A quantization writes n columns of type; rows [n, n + threads*scratch)
	// of its output are each thread's scratch for the products that read it.
	enum ggml_type type;
	int64_t n, scratch;
	struct hr_gemm_node *reset[8];
	int n_reset;
	int kernels; // product: HR_KERNELS_AVX2 or _AVX512 (token steps)
} hr_gemm_node;

#define HR_ARENA_NODES 64
struct hr_gemm_arena {
	hr_gemm_arena *prev;
	int used, products;
	hr_gemm_node nodes[HR_ARENA_NODES];
};

int hr_gemm_products(const hr_gemm_arena *a) {
	int n = 0;
	for (; a; a = a->prev) {
		n += a->products;
	}
	return n;
}

// Arenas are aligned for their counters' cache lines; MinGW's C library has
// no C11 aligned_alloc, so Windows takes the CRT's own pair.
static inline void *arena_alloc(size_t align, size_t size) {
#ifdef _WIN32
	return _aligned_malloc(size, align);
#else
	return aligned_alloc(align, size);
#endif
}

static inline void arena_release(void *p) {
#ifdef _WIN32
	_aligned_free(p);
#else
	free(p);
#endif
}

void hr_gemm_arena_free(hr_gemm_arena **a) {
	while (*a) {
		hr_gemm_arena *p = (*a)->prev;
		arena_release(*a);
		*a = p;
	}
}

// Rows per chunk taken from the counter, and columns per pass over them
// (their quantized inputs stay in L2 while the chunk's rows go by).
#define HR_CHUNK_ROWS 16
#define HR_COL_BLOCK 64
// Batches of up to this many columns (token steps: decode, and speculation's
// verification passes) run on the token-step kernels, which read each weight
// byte once for all the columns, in place.
#define HR_TOKEN_COLS 4

#ifdef HR_GEMM
#ifdef HR_GEMM_PRAGMA
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

static hr_gemm_node *arena_node(hr_gemm_arena **a) {
	if (!*a || (*a)->used == HR_ARENA_NODES) {
		hr_gemm_arena *n = arena_alloc(_Alignof(hr_gemm_arena), sizeof(*n));
		if (!n) {
			return NULL;
		}
		memset(n, 0, sizeof(*n));
		n->prev = *a;
		*a = n;
	}
	return &(*a)->nodes[(*a)->used++];
}

static inline float hsum8(__m256 x) { // hsum_float_8 / tinyBLAS hsum
	__m128 r = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
	r = _mm_add_ps(r, _mm_movehl_ps(r, r));
	r = _mm_add_ss(r, _mm_movehdup_ps(r));
	return _mm_cvtss_f32(r);
}

static inline __attribute__((always_inline)) float hsum4(__m128 m) { // acc_m's sum in ggml's Q4_K vec_dot
	m = _mm_add_ps(m, _mm_movehl_ps(m, m));
	m = _mm_add_ss(m, _mm_movehdup_ps(m));
	return _mm_cvtss_f32(m);
}

// The K-quant unpacking every kernel shares, each written once: the prompt
// kernels (q4k_row, q6k_row), the token-step ones (q4k_gemv, q5k_gemv,
// q6k_gemv) and their AVX-512 builds inline these, so one fix reaches all.

// k4_scales_mins: a Q4_K or Q5_K superblock's 8 6-bit scales and 8 6-bit
// mins (ggml's utmp shuffle with kmask1..3), widened to int16: the scales in
// both 128-bit halves of *scales (for k4_scale), the mins in *mins.
static inline __attribute__((always_inline)) void k4_scales_mins(const uint8_t *packed, __m256i *scales,
								  __m128i *mins) {
	uint32_t utmp[4];
	memcpy(utmp, packed, 12);
	utmp[3] = ((utmp[2] >> 4) & 0x0f0f0f0f) | (((utmp[1] >> 6) & 0x03030303) << 4);
	const uint32_t uaux = utmp[1] & 0x3f3f3f3f;
	utmp[1] = (utmp[2] & 0x0f0f0f0f) | (((utmp[0] >> 6) & 0x03030303) << 4);
	utmp[2] = uaux;
	utmp[0] &= 0x3f3f3f3f;
	const __m256i ms = _mm256_cvtepu8_epi16(_mm_set_epi32(utmp[3], utmp[2], utmp[1], utmp[0]));
	*mins = _mm256_extracti128_si256(ms, 1);
	const __m128i sc128 = _mm256_extracti128_si256(ms, 0);
	*scales = _mm256_set_m128i(sc128, sc128);
}

// k4_scale: ggml's get_scale_shuffle_k4(2j + h), the int16 scale of 32-weight
// chunk 2j + h (h = 0: the low nibbles of qs[32j..], 1: the high) in every
// lane of scales (from k4_scales_mins).
static inline __attribute__((always_inline)) __m256i k4_scale(__m256i scales, int j, int h) {
	const int s = 2 * (2 * j + h);
	return _mm256_shuffle_epi8(scales, _mm256_set1_epi16((short)(0x0100 * (s + 1) + s)));
}

// k4_nibbles: the 64 4-bit weights of qs[32j..32j+32): low nibbles in *lo
// (chunk 2j), high in *hi (chunk 2j + 1).
static inline __attribute__((always_inline)) void k4_nibbles(const uint8_t *qs, int j, __m256i *lo, __m256i *hi) {
	const __m256i m4 = _mm256_set1_epi8(0xF);
	const __m256i q4bits = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
	*lo = _mm256_and_si256(q4bits, m4);
	*hi = _mm256_and_si256(_mm256_srli_epi16(q4bits, 4), m4);
}

// q8k_bsums: a Q8_K block's 16 sums of 16 quants added in pairs (ggml's
// _mm_hadd_epi16 of the two halves): the 8 sums the mins multiply.
static inline __attribute__((always_inline)) __m128i q8k_bsums(const hr_block_q8_K *yb) {
	const __m256i q8sums = _mm256_loadu_si256((const __m256i *)yb->bsums);
	return _mm_hadd_epi16(_mm256_extracti128_si256(q8sums, 0), _mm256_extracti128_si256(q8sums, 1));
}

// q4k_mins: ggml's Q4_K mins term of one superblock added to acc_m: the
// 8 mins times the pairs of bsums (q8k_bsums), as floats times dmin.
static inline __attribute__((always_inline)) __m128 q4k_mins(__m128i mins, __m128i q8s, float dmin, __m128 acc_m) {
	return _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(_mm_madd_epi16(mins, q8s)), acc_m);
}

// q5k_mins: ggml's Q5_K mins term: the same products summed as one int,
// summs += dmin * sum (contracted to an FMA, as GCC does under gnu C).
static inline __attribute__((always_inline)) float q5k_mins(__m128i mins, __m128i q8s, float dmin, float summs) {
	const __m128i prod = _mm_madd_epi16(mins, q8s);
	const __m128i hsum = _mm_hadd_epi32(_mm_hadd_epi32(prod, _mm_setzero_si128()), _mm_setzero_si128());
	return __builtin_fmaf(dmin, (float)_mm_cvtsi128_si32(hsum), summs);
}

// q5k_block_mins: q5k_mins of superblock i of rows x[0..nr) (mins[r]: row
// r's) against the nc Q8_K columns y + c*ys, into summs[r][c]; the AVX2 and
// AVX-512 token kernels share it.
static inline __attribute__((always_inline)) void q5k_block_mins(const char *x, size_t xs, int i, const char *y,
								  size_t ys, const int nr, const int nc,
								  const __m128i mins[4], float summs[4][4]) {
	_Pragma("GCC unroll 4")
	for (int c = 0; c < nc; c++) {
		const hr_block_q8_K *yb = (const hr_block_q8_K *)(y + c * ys) + i;
		const __m128i q8s = q8k_bsums(yb);
		_Pragma("GCC unroll 4")
		for (int r = 0; r < nr; r++) {
			const hr_block_q5_K *xb = (const hr_block_q5_K *)(x + r * xs) + i;
			const float dmin = -yb->d * _cvtsh_ss(xb->dmin);
			summs[r][c] = q5k_mins(mins[r], q8s, dmin, summs[r][c]);
		}
	}
}

// q6k_quants: 32-weight chunk k (0..7) of a Q6_K superblock as unsigned
// bytes 0..63 (4 low bits of ql | 2 high bits of qh << 4), as ggml's AVX2
// vec_dot unpacks chunk k%4 of its half j = k/4.
static inline __attribute__((always_inline)) __m256i q6k_quants(const hr_block_q6_K *xb, int k) {
	const __m256i m4 = _mm256_set1_epi8(0xF), m2 = _mm256_set1_epi8(3);
	const int j = k / 4, part = k % 4;
	const __m256i lo = _mm256_loadu_si256((const __m256i *)(xb->ql + 64 * j + 32 * (part & 1)));
	const __m256i hi = _mm256_loadu_si256((const __m256i *)(xb->qh + 32 * j));
	return _mm256_or_si256(_mm256_and_si256(part < 2 ? lo : _mm256_srli_epi16(lo, 4), m4),
			       _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(hi, _mm_cvtsi32_si128(2 * part)), m2), 4));
}

// q6k_scale: ggml's get_scale_shuffle(k) widened: the int8 scale 2k in the
// low 8 int16 lanes, 2k+1 in the high, of scales (the block's 16 scales).
static inline __attribute__((always_inline)) __m256i q6k_scale(__m128i scales, int k) {
	return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, _mm_set_epi64x((long long)(0x0101010101010101ULL * (2 * k + 1)),
									     (long long)(0x0101010101010101ULL * (2 * k)))));
}

// q4k_row: one Q4_K row x against nc (<= 8) Q8_K columns y + c*ys, exactly as
// ggml_vec_dot_q4_K_q8_K's AVX2 path computes each of them.
static inline __attribute__((always_inline)) void q4k_row(const hr_block_q4_K *x, int nbk, const char *y, size_t ys,
							   const int nc, float *out, size_t os) {
	__m256 acc[8];
	__m128 acc_m[8];
	_Pragma("GCC unroll 8")
	for (int c = 0; c < nc; c++) {
		acc[c] = _mm256_setzero_ps();
		acc_m[c] = _mm_setzero_ps();
	}
	for (int i = 0; i < nbk; i++) {
		const hr_block_q4_K *xb = x + i;
		const float xd = _cvtsh_ss(xb->d), xdmin = _cvtsh_ss(xb->dmin);
		__m256i scales;
		__m128i mins;
		k4_scales_mins(xb->scales, &scales, &mins);

		__m256i sumi[8];
		_Pragma("GCC unroll 8")
		for (int c = 0; c < nc; c++) {
			sumi[c] = _mm256_setzero_si256();
		}
		_Pragma("GCC unroll 1")
		for (int j = 0; j < 4; j++) {
			const __m256i scale_l = k4_scale(scales, j, 0), scale_h = k4_scale(scales, j, 1);
			__m256i q4l, q4h;
			k4_nibbles(xb->qs, j, &q4l, &q4h);
			_Pragma("GCC unroll 8")
			for (int c = 0; c < nc; c++) {
				const int8_t *q8 = ((const hr_block_q8_K *)(y + c * ys) + i)->qs + 64 * j;
				const __m256i p16l = _mm256_madd_epi16(
				    scale_l, _mm256_maddubs_epi16(q4l, _mm256_loadu_si256((const __m256i *)q8)));
				const __m256i p16h = _mm256_madd_epi16(
				    scale_h, _mm256_maddubs_epi16(q4h, _mm256_loadu_si256((const __m256i *)(q8 + 32))));
				sumi[c] = _mm256_add_epi32(sumi[c], _mm256_add_epi32(p16l, p16h));
			}
		}
		_Pragma("GCC unroll 8")
		for (int c = 0; c < nc; c++) {
			const hr_block_q8_K *yb = (const hr_block_q8_K *)(y + c * ys) + i;
			const float d = yb->d * xd;
			const float dmin = -yb->d * xdmin;
			const __m128i q8s = q8k_bsums(yb);
			acc_m[c] = q4k_mins(mins, q8s, dmin, acc_m[c]);
			acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[c]), acc[c]);
		}
	}
	_Pragma("GCC unroll 8")
	for (int c = 0; c < nc; c++) {
		out[c * os] = hsum8(acc[c]) + hsum4(acc_m[c]);
	}
}

// q6k_row: one Q6_K row x against nc (<= 8) Q8_K columns y + c*ys, exactly as
// ggml_vec_dot_q6_K_q8_K's AVX2 path computes each of them. Each of a
// superblock's 8 chunks of 32 weights is unpacked (4 low bits | 2 high bits
// << 4) and its two scales widened once for all the columns.
static inline __attribute__((always_inline)) void q6k_row(const hr_block_q6_K *x, int nbk, const char *y, size_t ys,
							   const int nc, float *out, size_t os) {
	const __m256i m32s = _mm256_set1_epi8(32);
	__m256 acc[8];
	_Pragma("GCC unroll 8")
	for (int c = 0; c < nc; c++) {
		acc[c] = _mm256_setzero_ps();
	}
	for (int i = 0; i < nbk; i++) {
		const hr_block_q6_K *xb = x + i;
		const __m128i scales = _mm_loadu_si128((const __m128i *)xb->scales);
		__m256i sumi[8];
		_Pragma("GCC unroll 8")
		for (int c = 0; c < nc; c++) {
			sumi[c] = _mm256_setzero_si256();
		}
		_Pragma("GCC unroll 1")
		for (int k = 0; k < 8; k++) { // chunk k: j = k/4 of the vec_dot, its q4_{k%4}
			const __m256i q6 = q6k_quants(xb, k), scale = q6k_scale(scales, k);
			_Pragma("GCC unroll 8")
			for (int c = 0; c < nc; c++) {
				const __m256i q8 = _mm256_loadu_si256(
				    (const __m256i *)(((const hr_block_q8_K *)(y + c * ys) + i)->qs + 32 * k));
				const __m256i p16 =
				    _mm256_sub_epi16(_mm256_maddubs_epi16(q6, q8), _mm256_maddubs_epi16(m32s, q8));
				sumi[c] = _mm256_add_epi32(sumi[c], _mm256_madd_epi16(scale, p16));
			}
		}
		const float xd = _cvtsh_ss(xb->d);
		_Pragma("GCC unroll 8")
		for (int c = 0; c < nc; c++) {
			const float d = ((const hr_block_q8_K *)(y + c * ys) + i)->d * xd;
			acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[c]), acc[c]);
		}
	}
	_Pragma("GCC unroll 8")
	for (int c = 0; c < nc; c++) {
		out[c * os] = hsum8(acc[c]);
	}
}

// kquant_rows: rows [r0, r1) of a Q4_K or Q6_K weight against columns
// [c0, c1), 8 at a time.
static inline __attribute__((always_inline)) void kquant_cols(enum ggml_type t, const char *x, int nbk, const char *y,
							       size_t ys, const int nc, float *out, size_t os) {
	if (t == GGML_TYPE_Q6_K) {
		q6k_row((const hr_block_q6_K *)x, nbk, y, ys, nc, out, os);
	} else {
		q4k_row((const hr_block_q4_K *)x, nbk, y, ys, nc, out, os);
	}
}

#define KQUANT_COLS(nc) kquant_cols(w->type, x, nbk, (const char *)q->data + c * ys, ys, nc, out + c * os, os)

static void kquant_rows(const struct ggml_tensor *w, const struct ggml_tensor *q, struct ggml_tensor *dst, int64_t r0,
			int64_t r1, int64_t c0, int64_t c1) {
	const int nbk = (int)(w->ne[0] / 256);
	const size_t ys = q->nb[1], os = dst->nb[1] / sizeof(float);
	for (int64_t r = r0; r < r1; r++) {
		const char *x = (const char *)w->data + r * w->nb[1];
		float *out = (float *)dst->data + r;
		int64_t c = c0;
		for (; c + 8 <= c1; c += 8) {
			KQUANT_COLS(8);
		}
		if (c + 4 <= c1) {
			KQUANT_COLS(4);
			c += 4;
		}
		switch (c1 - c) {
		case 3: KQUANT_COLS(3); break;
		case 2: KQUANT_COLS(2); break;
		case 1: KQUANT_COLS(1); break;
		}
	}
}

// A quad is 4 weight rows of Q8_0 prepared for q80_tile in a thread's
// scratch: per block, the 4 rows' |a| (maddubs's unsigned operand; tinyBLAS
// recomputes it in every tile) and their 4 scales as floats.
typedef struct {
	__m256i *abs; // [nbk][4]
	__m128 *d;    // [nbk]
} q80_quad;

// Rounded up to 32 bytes: the next quad's |a| must be aligned too.
static size_t quad_bytes(int64_t nbk) {
	return ((size_t)nbk * (4 * sizeof(__m256i) + sizeof(__m128)) + 31) & ~(size_t)31;
}

// A thread's scratch holds the quads of one chunk of rows.
static size_t chunk_scratch_bytes(int64_t nbk) { return HR_CHUNK_ROWS / 4 * quad_bytes(nbk) + 32; }

static q80_quad quad_at(char *scratch, int64_t nbk, int qi) {
	char *p = (char *)(((uintptr_t)scratch + 31) & ~(uintptr_t)31) + qi * quad_bytes(nbk);
	return (q80_quad){(__m256i *)p, (__m128 *)(p + (size_t)nbk * 4 * sizeof(__m256i))};
}

static void quad_prepare(q80_quad quad, const char *x, size_t xs, int nr, int nbk) {
	for (int l = 0; l < nbk; l++) {
		float d[4] = {0, 0, 0, 0};
		for (int i = 0; i < 4; i++) {
			const hr_block_q8_0 *a = (const hr_block_q8_0 *)(x + (i < nr ? i : 0) * xs) + l;
			const __m256i av = _mm256_loadu_si256((const __m256i *)a->qs);
			quad.abs[4 * l + i] = _mm256_sign_epi8(av, av);
			d[i] = _cvtsh_ss(a->d);
		}
		quad.d[l] = _mm_loadu_ps(d);
	}
}

// q80_tile: the prepared quad's rows x[0..nr) against columns y + c*ys,
// c < nc (nc <= 2), each output as llamafile's tinyBLAS_Q0_AVX computes it
// for Q8_0 x Q8_0: per block fma(da*db, float(lane sums of 4 byte products),
// acc) (da*db as _mm_mul_ps of the 4 rows' scales by db), then hsum.
static inline __attribute__((always_inline)) void q80_tile(q80_quad quad, const char *x, size_t xs, int nbk,
							    const char *y, size_t ys, const int nr, const int nc, float *out,
							    size_t os) {
	const __m256i ones = _mm256_set1_epi16(1);
	__m256 acc[4][2];
	_Pragma("GCC unroll 4")
	for (int i = 0; i < 4; i++) {
		_Pragma("GCC unroll 4")
		for (int j = 0; j < nc; j++) {
			acc[i][j] = _mm256_setzero_ps();
		}
	}
	for (int l = 0; l < nbk; l++) {
		_Pragma("GCC unroll 4")
		for (int j = 0; j < nc; j++) {
			const hr_block_q8_0 *b = (const hr_block_q8_0 *)(y + j * ys) + l;
			const __m256i bv = _mm256_loadu_si256((const __m256i *)b->qs);
			const __m128 d4 = _mm_mul_ps(quad.d[l], _mm_set1_ps(_cvtsh_ss(b->d)));
			const __m256 d8 = _mm256_set_m128(d4, d4);
			_Pragma("GCC unroll 4")
			for (int i = 0; i < nr; i++) {
				const hr_block_q8_0 *a = (const hr_block_q8_0 *)(x + i * xs) + l;
				const __m256i s = _mm256_sign_epi8(bv, _mm256_loadu_si256((const __m256i *)a->qs));
				const __m256 dot = _mm256_cvtepi32_ps(
				    _mm256_madd_epi16(_mm256_maddubs_epi16(quad.abs[4 * l + i], s), ones));
				__m256 sc;
				switch (i) {
				case 0: sc = _mm256_permute_ps(d8, 0x00); break;
				case 1: sc = _mm256_permute_ps(d8, 0x55); break;
				case 2: sc = _mm256_permute_ps(d8, 0xaa); break;
				default: sc = _mm256_permute_ps(d8, 0xff); break;
				}
				acc[i][j] = _mm256_fmadd_ps(sc, dot, acc[i][j]);
			}
		}
	}
	_Pragma("GCC unroll 4")
	for (int i = 0; i < nr; i++) {
		_Pragma("GCC unroll 4")
		for (int j = 0; j < nc; j++) {
			out[j * os + i] = hsum8(acc[i][j]);
		}
	}
}

#define Q80_TILE(nr, nc) q80_tile(quad, x, xs, nbk, (const char *)q->data + c * ys, ys, nr, nc, out + c * os, os)

// q80_rows: rows [r0, r1) (one chunk, its quads prepared in scratch) against
// columns [c0, c1).
static void q80_rows(const struct ggml_tensor *w, const struct ggml_tensor *q, struct ggml_tensor *dst, int64_t r0,
		     int64_t r1, int64_t c0, int64_t c1, char *scratch) {
	const int nbk = (int)(w->ne[0] / 32);
	const size_t xs = w->nb[1], ys = q->nb[1], os = dst->nb[1] / sizeof(float);
	for (int64_t r = r0; r < r1; r += 4) {
		const char *x = (const char *)w->data + r * xs;
		float *out = (float *)dst->data + r;
		const int nr = r1 - r < 4 ? (int)(r1 - r) : 4;
		const q80_quad quad = quad_at(scratch, nbk, (int)((r - r0) / 4));
		int64_t c = c0;
		switch (nr) {
		case 4:
			for (; c + 2 <= c1; c += 2) {
				Q80_TILE(4, 2);
			}
			if (c < c1) {
				Q80_TILE(4, 1);
			}
			break;
		case 3: for (; c < c1; c++) Q80_TILE(3, 1); break;
		case 2: for (; c < c1; c++) Q80_TILE(2, 1); break;
		default: for (; c < c1; c++) Q80_TILE(1, 1); break;
		}
	}
}

// Token steps: 1 to 4 columns (decode, speculation's verification passes),
// where ggml runs its vector kernels one (row, column) at a time
// (ggml_vec_dot_q4_K_q8_K, _q6_K_q8_K; for Q8_0 ggml_vec_dot_q8_0_q8_0 at
// n = 1 and llamafile's tinyBLAS at n >= 2, whose per-output arithmetic is
// the vec_dot's). These compute up to 4 rows per pass against all the
// columns, each output's arithmetic exactly as ggml does it, so each weight
// byte is read once per step, the columns' loads and the per-block scalar
// work are shared, and the independent FMA chains hide each other's latency.
// The int32 lane sums are exact (no
// int16 pair saturates for quantized activations), so VNNI's vpdpbusd,
// which sums the same 4 byte products per lane, gives the same integers.

// 4 rows read side by side are 4 streams, which the hardware prefetcher
// serves worse than ggml's one: while the kernels read 4 rows they sweep
// the next 4 (one contiguous span) with software prefetches, front to
// back at the same pace, so that memory sees one sequential stream.

// q80_gemv: rows x[0..nr) (nr <= 4) against the nc (<= 4) Q8_0 columns
// y + c*ys, each as ggml_vec_dot_q8_0_q8_0's AVX2 path (n = 1) and
// llamafile's tinyBLAS_Q0_AVX (n >= 2) compute it, which is the same
// arithmetic: acc = fma(xd*yd, float(lane sums), acc) per block, then
// hsum_float_8. Each weight block is loaded once for all the columns.
static inline __attribute__((always_inline)) void q80_gemv(const char *x, size_t xs, int nbk, const char *y, size_t ys,
							    const int nr, const int nc, float *out, size_t os) {
	const __m256i ones = _mm256_set1_epi16(1);
	__m256 acc[4][4];
	_Pragma("GCC unroll 4")
	for (int i = 0; i < nr; i++) {
		_Pragma("GCC unroll 4")
		for (int c = 0; c < nc; c++) {
			acc[i][c] = _mm256_setzero_ps();
		}
	}
	for (int l = 0; l < nbk; l++) {
		__m256i yv[4];
		float yd[4];
		_Pragma("GCC unroll 4")
		for (int c = 0; c < nc; c++) {
			const hr_block_q8_0 *b = (const hr_block_q8_0 *)(y + c * ys) + l;
			yv[c] = _mm256_loadu_si256((const __m256i *)b->qs);
			yd[c] = _cvtsh_ss(b->d);
		}
		_Pragma("GCC unroll 4")
		for (int i = 0; i < nr; i++) {
			const hr_block_q8_0 *a = (const hr_block_q8_0 *)(x + i * xs) + l;
			_mm_prefetch(x + nr * xs + (nr * l + i) * sizeof(hr_block_q8_0), _MM_HINT_T0);
			const __m256i av = _mm256_loadu_si256((const __m256i *)a->qs);
			const __m256i ua = _mm256_sign_epi8(av, av);
			const float ad = _cvtsh_ss(a->d);
			_Pragma("GCC unroll 4")
			for (int c = 0; c < nc; c++) {
				const __m256i dot =
				    _mm256_madd_epi16(_mm256_maddubs_epi16(ua, _mm256_sign_epi8(yv[c], av)), ones);
				acc[i][c] = _mm256_fmadd_ps(_mm256_set1_ps(ad * yd[c]), _mm256_cvtepi32_ps(dot), acc[i][c]);
			}
		}
	}
	_Pragma("GCC unroll 4")
	for (int i = 0; i < nr; i++) {
		_Pragma("GCC unroll 4")
		for (int c = 0; c < nc; c++) {
			out[c * os + i] = hsum8(acc[i][c]);
		}
	}
}

// q4k_gemv: rows x[0..nr) (nr <= 4) against the nc (<= 4) Q8_K columns
// y + c*ys, each as ggml_vec_dot_q4_K_q8_K's AVX2 path (as q4k_row, rows and
// columns swapped).
static inline __attribute__((always_inline)) void q4k_gemv(const char *x, size_t xs, int nbk, const char *y, size_t ys,
							    const int nr, const int nc, float *out, size_t os) {
	__m256 acc[4][4];
	__m128 acc_m[4][4];
	_Pragma("GCC unroll 4")
	for (int r = 0; r < nr; r++) {
		_Pragma("GCC unroll 4")
		for (int c = 0; c < nc; c++) {
			acc[r][c] = _mm256_setzero_ps();
			acc_m[r][c] = _mm_setzero_ps();
		}
	}
	for (int i = 0; i < nbk; i++) {
		__m256i scales[4], sumi[4][4];
		__m128i mins[4];
		_Pragma("GCC unroll 4")
		for (int r = 0; r < nr; r++) {
			const hr_block_q4_K *xb = (const hr_block_q4_K *)(x + r * xs) + i;
			k4_scales_mins(xb->scales, &scales[r], &mins[r]);
			_Pragma("GCC unroll 4")
			for (int c = 0; c < nc; c++) {
				sumi[r][c] = _mm256_setzero_si256();
			}
		}
		_Pragma("GCC unroll 1")
		for (int j = 0; j < 4; j++) {
			_Pragma("GCC unroll 4")
			for (int r = 0; r < nr; r++) {
				const hr_block_q4_K *xb = (const hr_block_q4_K *)(x + r * xs) + i;
				_mm_prefetch(x + nr * xs + ((4 * i + j) * nr + r) * 36, _MM_HINT_T0);
				__m256i q4l, q4h;
				k4_nibbles(xb->qs, j, &q4l, &q4h);
				const __m256i scl = k4_scale(scales[r], j, 0), sch = k4_scale(scales[r], j, 1);
				_Pragma("GCC unroll 4")
				for (int c = 0; c < nc; c++) {
					const int8_t *q8 = ((const hr_block_q8_K *)(y + c * ys) + i)->qs + 64 * j;
					const __m256i p16l = _mm256_madd_epi16(
					    scl, _mm256_maddubs_epi16(q4l, _mm256_loadu_si256((const __m256i *)q8)));
					const __m256i p16h = _mm256_madd_epi16(
					    sch, _mm256_maddubs_epi16(q4h, _mm256_loadu_si256((const __m256i *)(q8 + 32))));
					sumi[r][c] = _mm256_add_epi32(sumi[r][c], _mm256_add_epi32(p16l, p16h));
				}
			}
		}
		_Pragma("GCC unroll 4")
		for (int c = 0; c < nc; c++) {
			const hr_block_q8_K *yb = (const hr_block_q8_K *)(y + c * ys) + i;
			const __m128i q8s = q8k_bsums(yb);
			_Pragma("GCC unroll 4")
			for (int r = 0; r < nr; r++) {
				const hr_block_q4_K *xb = (const hr_block_q4_K *)(x + r * xs) + i;
				const float d = yb->d * _cvtsh_ss(xb->d);
				const float dmin = -yb->d * _cvtsh_ss(xb->dmin);
				acc_m[r][c] = q4k_mins(mins[r], q8s, dmin, acc_m[r][c]);
				acc[r][c] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[r][c]), acc[r][c]);
			}
		}
	}
	_Pragma("GCC unroll 4")
	for (int r = 0; r < nr; r++) {
		_Pragma("GCC unroll 4")
		for (int c = 0; c < nc; c++) {
			out[c * os + r] = hsum8(acc[r][c]) + hsum4(acc_m[r][c]);
		}
	}
}

// q5k_gemv: rows x[0..nr) (nr <= 4) against the nc (<= 4) Q8_K columns
// y + c*ys, each as ggml_vec_dot_q5_K_q8_K's AVX2 path computes it: the
// mins' part summed as a scalar per superblock, summs = fma(dmin, float(sum),
// summs) (ggml's summs += dmin * sum, contracted as GCC does under gnu C),
// the rest as q4k_gemv with each weight's fifth bit from qh; then
// hsum_float_8(acc) + summs.
static inline __attribute__((always_inline)) void q5k_gemv(const char *x, size_t xs, int nbk, const char *y, size_t ys,
							    const int nr, const int nc, float *out, size_t os) {
	const __m256i mone = _mm256_set1_epi8(1);
	__m256 acc[4][4];
	float summs[4][4];
	_Pragma("GCC unroll 4")
	for (int r = 0; r < nr; r++) {
		_Pragma("GCC unroll 4")
		for (int c = 0; c < nc; c++) {
			acc[r][c] = _mm256_setzero_ps();
			summs[r][c] = 0.0f;
		}
	}
	for (int i = 0; i < nbk; i++) {
		__m256i scales[4], hbits[4], sumi[4][4];
		__m128i mins[4];
		_Pragma("GCC unroll 4")
		for (int r = 0; r < nr; r++) {
			const hr_block_q5_K *xb = (const hr_block_q5_K *)(x + r * xs) + i;
			k4_scales_mins(xb->scales, &scales[r], &mins[r]);
			hbits[r] = _mm256_loadu_si256((const __m256i *)xb->qh);
			_Pragma("GCC unroll 4")
			for (int c = 0; c < nc; c++) {
				sumi[r][c] = _mm256_setzero_si256();
			}
		}
		q5k_block_mins(x, xs, i, y, ys, nr, nc, mins, summs);
		_Pragma("GCC unroll 1")
		for (int j = 0; j < 4; j++) {
			const __m128i bl = _mm_cvtsi32_si128(2 * j), bh = _mm_cvtsi32_si128(2 * j + 1);
			_Pragma("GCC unroll 4")
			for (int r = 0; r < nr; r++) {
				const hr_block_q5_K *xb = (const hr_block_q5_K *)(x + r * xs) + i;
				_mm_prefetch(x + nr * xs + ((4 * i + j) * nr + r) * 44, _MM_HINT_T0);
				__m256i q4l, q4h;
				k4_nibbles(xb->qs, j, &q4l, &q4h);
				const __m256i q5l = _mm256_add_epi8(
				    q4l, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(hbits[r], bl), mone), 4));
				const __m256i q5h = _mm256_add_epi8(
				    q4h, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(hbits[r], bh), mone), 4));
				const __m256i scl = k4_scale(scales[r], j, 0), sch = k4_scale(scales[r], j, 1);
				_Pragma("GCC unroll 4")
				for (int c = 0; c < nc; c++) {
					const int8_t *q8 = ((const hr_block_q8_K *)(y + c * ys) + i)->qs + 64 * j;
					const __m256i p16l = _mm256_madd_epi16(
					    scl, _mm256_maddubs_epi16(q5l, _mm256_loadu_si256((const __m256i *)q8)));
					const __m256i p16h = _mm256_madd_epi16(
					    sch, _mm256_maddubs_epi16(q5h, _mm256_loadu_si256((const __m256i *)(q8 + 32))));
					sumi[r][c] = _mm256_add_epi32(sumi[r][c], _mm256_add_epi32(p16l, p16h));
				}
			}
		}
		_Pragma("GCC unroll 4")
		for (int c = 0; c < nc; c++) {
			const hr_block_q8_K *yb = (const hr_block_q8_K *)(y + c * ys) + i;
			_Pragma("GCC unroll 4")
			for (int r = 0; r < nr; r++) {
				const float d = yb->d * _cvtsh_ss(((const hr_block_q5_K *)(x + r * xs) + i)->d);
				acc[r][c] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[r][c]), acc[r][c]);
			}
		}
	}
	_Pragma("GCC unroll 4")
	for (int r = 0; r < nr; r++) {
		_Pragma("GCC unroll 4")
		for (int c = 0; c < nc; c++) {
			out[c * os + r] = hsum8(acc[r][c]) + summs[r][c];
		}
	}
}

// q6k_gemv: rows x[0..nr) (nr <= 4) against the nc (<= 4) Q8_K columns
// y + c*ys, each as ggml_vec_dot_q6_K_q8_K's AVX2 path (as q6k_row, rows and
// columns swapped).
static inline __attribute__((always_inline)) void q6k_gemv(const char *x, size_t xs, int nbk, const char *y, size_t ys,
							    const int nr, const int nc, float *out, size_t os) {
	const __m256i m32s = _mm256_set1_epi8(32);
	__m256 acc[4][4];
	_Pragma("GCC unroll 4")
	for (int r = 0; r < nr; r++) {
		_Pragma("GCC unroll 4")
		for (int c = 0; c < nc; c++) {
			acc[r][c] = _mm256_setzero_ps();
		}
	}
	for (int i = 0; i < nbk; i++) {
		__m256i sumi[4][4];
		__m128i scales[4];
		_Pragma("GCC unroll 4")
		for (int r = 0; r < nr; r++) {
			scales[r] = _mm_loadu_si128((const __m128i *)((const hr_block_q6_K *)(x + r * xs) + i)->scales);
			_Pragma("GCC unroll 4")
			for (int c = 0; c < nc; c++) {
				sumi[r][c] = _mm256_setzero_si256();
			}
		}
		_Pragma("GCC unroll 1")
		for (int k = 0; k < 8; k++) { // chunk k: j = k/4 of the vec_dot, its q4_{k%4}
			__m256i q8[4], q8s[4];
			_Pragma("GCC unroll 4")
			for (int c = 0; c < nc; c++) {
				q8[c] = _mm256_loadu_si256(
				    (const __m256i *)(((const hr_block_q8_K *)(y + c * ys) + i)->qs + 32 * k));
				q8s[c] = _mm256_maddubs_epi16(m32s, q8[c]);
			}
			_Pragma("GCC unroll 4")
			for (int r = 0; r < nr; r++) {
				const hr_block_q6_K *xb = (const hr_block_q6_K *)(x + r * xs) + i;
				_mm_prefetch(x + nr * xs + ((8 * i + k) * nr + r) * 27, _MM_HINT_T0);
				const __m256i q6 = q6k_quants(xb, k), scale = q6k_scale(scales[r], k);
				_Pragma("GCC unroll 4")
				for (int c = 0; c < nc; c++) {
					const __m256i p16 = _mm256_sub_epi16(_mm256_maddubs_epi16(q6, q8[c]), q8s[c]);
					sumi[r][c] = _mm256_add_epi32(sumi[r][c], _mm256_madd_epi16(scale, p16));
				}
			}
		}
		_Pragma("GCC unroll 4")
		for (int r = 0; r < nr; r++) {
			const float xd = _cvtsh_ss(((const hr_block_q6_K *)(x + r * xs) + i)->d);
			_Pragma("GCC unroll 4")
			for (int c = 0; c < nc; c++) {
				const float d = ((const hr_block_q8_K *)(y + c * ys) + i)->d * xd;
				acc[r][c] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[r][c]), acc[r][c]);
			}
		}
	}
	_Pragma("GCC unroll 4")
	for (int r = 0; r < nr; r++) {
		_Pragma("GCC unroll 4")
		for (int c = 0; c < nc; c++) {
			out[c * os + r] = hsum8(acc[r][c]);
		}
	}
}

// GEMV_PASS: rows [r, r1) of w against the NC columns of q, R rows per pass
// (as many as the variant's vector registers hold the accumulators of), the
// rest one at a time.
#define GEMV_PASS(fn, R, NC)                                                                                           \
	do {                                                                                                           \
		for (; r + (R) <= r1; r += (R)) fn((const char *)w->data + r * xs, xs, nbk, y, ys, R, NC, out + r, os); \
		for (; r < r1; r++) fn((const char *)w->data + r * xs, xs, nbk, y, ys, 1, NC, out + r, os);          \
	} while (0)

// GEMV_TYPE: the product by fn for n = 1..4 columns, rows per pass R1..R4.
#define GEMV_TYPE_(...) GEMV_TYPE(__VA_ARGS__)
#define GEMV_TYPE(fn, R1, R2, R3, R4)                                                                                  \
	switch (n) {                                                                                                   \
	case 1: GEMV_PASS(fn, R1, 1); break;                                                                          \
	case 2: GEMV_PASS(fn, R2, 2); break;                                                                          \
	case 3: GEMV_PASS(fn, R3, 3); break;                                                                          \
	default: GEMV_PASS(fn, R4, 4); break;                                                                         \
	}

// gemv_rows: rows [r0, r1) of w against the n (<= 4) columns of q. The
// AVX-512 build of it (gemv_rows_avx512) is the same code given 32 vector
// registers (so more rows per pass), with VNNI kernels for Q8_0 (pairs of
// rows share 512-bit registers), Q4_K, Q5_K and Q6_K (pairs of chunks do).
#define GEMV_ROWS(name, attr, q80, q4k, q5k, q6k, Q80R, Q4KR, Q5KR, Q6KR)                                            \
	attr static void name(const struct ggml_tensor *w, const struct ggml_tensor *q, struct ggml_tensor *dst,       \
			      int64_t r0, int64_t r1, int64_t c0, int n) {                                             \
		const size_t xs = w->nb[1], ys = q->nb[1], os = dst->nb[1] / sizeof(float);                            \
		const char *y = (const char *)q->data + c0 * ys;                                                       \
		float *out = (float *)dst->data + c0 * os;                                                             \
		int64_t r = r0;                                                                                        \
		switch (w->type) {                                                                                     \
		case GGML_TYPE_Q8_0: {                                                                                 \
			const int nbk = (int)(w->ne[0] / 32);                                                          \
			GEMV_TYPE_(q80, Q80R);                                                                         \
			break;                                                                                         \
		}                                                                                                      \
		case GGML_TYPE_Q4_K: {                                                                                 \
			const int nbk = (int)(w->ne[0] / 256);                                                         \
			GEMV_TYPE_(q4k, Q4KR);                                                                         \
			break;                                                                                         \
		}                                                                                                      \
		case GGML_TYPE_Q5_K: {                                                                                 \
			const int nbk = (int)(w->ne[0] / 256);                                                         \
			GEMV_TYPE_(q5k, Q5KR);                                                                         \
			break;                                                                                         \
		}                                                                                                      \
		default: {                                                                                             \
			const int nbk = (int)(w->ne[0] / 256);                                                         \
			GEMV_TYPE_(q6k, Q6KR);                                                                         \
			break;                                                                                         \
		}                                                                                                      \
		}                                                                                                      \
	}

// Rows per pass for n = 1..4 columns: as many as keep the accumulators
// (rows x columns of them, and Q4_K's 128-bit ones for the mins) and the
// column's vectors in 16 registers (AVX2) or 32 (AVX-512).
#define HR_AVX2_Q80R 4, 4, 2, 2
#define HR_AVX2_Q4KR 4, 2, 1, 1
#define HR_AVX2_Q5KR 4, 2, 1, 1
#define HR_AVX2_Q6KR 4, 2, 1, 1
#define HR_AVX512_Q80R 4, 4, 4, 4
#define HR_AVX512_Q4KR 4, 4, 2, 2
#define HR_AVX512_Q5KR 4, 4, 2, 2
#define HR_AVX512_Q6KR 4, 4, 2, 2

GEMV_ROWS(gemv_rows_avx2, , q80_gemv, q4k_gemv, q5k_gemv, q6k_gemv, HR_AVX2_Q80R, HR_AVX2_Q4KR, HR_AVX2_Q5KR, HR_AVX2_Q6KR)

#define HR_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

// q80_gemv4_avx512: q80_gemv of 4 rows against nc (<= 4) columns, rows 0
// and 1 in the low and high halves of one 512-bit register, 2 and 3 in
// another: the lane sums by vpdpbusd of |x| and y signed by x (the same 4
// products per lane as maddubs + madd), the scales x.d * y.d as floats (4
// products in one _mm_mul_ps: each is the one rounding of the scalar
// product), each half's FMA as ggml's, each half summed by hsum_float_8.
HR_AVX512 static inline __attribute__((always_inline)) void q80_gemv4_avx512(const char *x, size_t xs, int nbk,
									       const char *y, size_t ys, const int nc,
									       float *out, size_t os) {
	const hr_block_q8_0 *a0 = (const hr_block_q8_0 *)x, *a1 = (const hr_block_q8_0 *)(x + xs),
			    *a2 = (const hr_block_q8_0 *)(x + 2 * xs), *a3 = (const hr_block_q8_0 *)(x + 3 * xs);
	const __m512i zero = _mm512_setzero_si512();
	const __m512i idx01 = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
	const __m512i idx23 = _mm512_set_epi32(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2);
	__m512 acc01[4], acc23[4];
	_Pragma("GCC unroll 4")
	for (int c = 0; c < nc; c++) {
		acc01[c] = _mm512_setzero_ps();
		acc23[c] = _mm512_setzero_ps();
	}
	for (int l = 0; l < nbk; l++) {
		const __m128 xd = _mm_cvtph_ps(
		    _mm_set_epi16(0, 0, 0, 0, (short)a3[l].d, (short)a2[l].d, (short)a1[l].d, (short)a0[l].d));
		_mm_prefetch(x + 4 * xs + 4 * l * sizeof(hr_block_q8_0), _MM_HINT_T0);
		_mm_prefetch(x + 4 * xs + 4 * l * sizeof(hr_block_q8_0) + 64, _MM_HINT_T0);
		_mm_prefetch(x + 4 * xs + 4 * l * sizeof(hr_block_q8_0) + 128, _MM_HINT_T0);
		const __m512i x01 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a0[l].qs)),
						       _mm256_loadu_si256((const __m256i *)a1[l].qs), 1);
		const __m512i x23 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a2[l].qs)),
						       _mm256_loadu_si256((const __m256i *)a3[l].qs), 1);
		const __mmask64 m01 = _mm512_movepi8_mask(x01), m23 = _mm512_movepi8_mask(x23);
		const __m512i u01 = _mm512_abs_epi8(x01), u23 = _mm512_abs_epi8(x23);
		_Pragma("GCC unroll 4")
		for (int c = 0; c < nc; c++) {
			const hr_block_q8_0 *b = (const hr_block_q8_0 *)(y + c * ys) + l;
			const __m512i yv = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)b->qs));
			const __m512 dz = _mm512_castps128_ps512(_mm_mul_ps(xd, _mm_set1_ps(_cvtsh_ss(b->d))));
			const __m512i s01 = _mm512_mask_sub_epi8(yv, m01, zero, yv);
			const __m512i s23 = _mm512_mask_sub_epi8(yv, m23, zero, yv);
			const __m512 q01 = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(zero, u01, s01));
			const __m512 q23 = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(zero, u23, s23));
			acc01[c] = _mm512_fmadd_ps(_mm512_permutexvar_ps(idx01, dz), q01, acc01[c]);
			acc23[c] = _mm512_fmadd_ps(_mm512_permutexvar_ps(idx23, dz), q23, acc23[c]);
		}
	}
	_Pragma("GCC unroll 4")
	for (int c = 0; c < nc; c++) {
		out[c * os + 0] = hsum8(_mm512_castps512_ps256(acc01[c]));
		out[c * os + 1] = hsum8(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc01[c]), 1)));
		out[c * os + 2] = hsum8(_mm512_castps512_ps256(acc23[c]));
		out[c * os + 3] = hsum8(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc23[c]), 1)));
	}
}

// q80_gemv_avx512: q80_gemv, 4 rows by q80_gemv4_avx512.
HR_AVX512 static inline __attribute__((always_inline)) void q80_gemv_avx512(const char *x, size_t xs, int nbk,
									      const char *y, size_t ys, const int nr,
									      const int nc, float *out, size_t os) {
	if (nr == 4) {
		q80_gemv4_avx512(x, xs, nbk, y, ys, nc, out, os);
	} else {
		q80_gemv(x, xs, nbk, y, ys, nr, nc, out, os);
	}
}
// The AVX-512 K-quant token steps. ggml's AVX2 vec_dots sum, per superblock
// and 256-bit lane, madd(scale, maddubs(q, q8)) over the superblock's chunks
// of 32 weights into int32 lanes, then take one FMA of the lanes as floats.
// No maddubs pair saturates (Q4_K: 15 * 128 * 2 < 2^15; Q6_K: 63 * 128 * 2),
// so those int32 lanes are exact sums and any exact way to them gives the
// same bits: here two chunks share a 512-bit register (one in the low half,
// one in the high, their Q8_K quants one 64-byte load or, for Q4_K, two
// halves of two), VNNI's
// vpdpwssd does madd and the add in one (no saturation: vpdpwssd, not
// vpdpwssds), and the two halves are added before the float part, which is
// ggml's unchanged.

// k4_scale512: k4_scale(2j) in the low half, k4_scale(2j + 1) in the high,
// of scales (k4_scales_mins' scales in all four 128-bit lanes).
HR_AVX512 static inline __attribute__((always_inline)) __m512i k4_scale512(__m512i scales, int j) {
	const int s0 = 4 * j, s1 = 4 * j + 2;
	const __m512i shuf = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16((short)(0x0100 * (s0 + 1) + s0))),
						_mm256_set1_epi16((short)(0x0100 * (s1 + 1) + s1)), 1);
	return _mm512_shuffle_epi8(scales, shuf);
}

// k4_nibbles512: k4_nibbles' lo in the low half, hi in the high.
HR_AVX512 static inline __attribute__((always_inline)) __m512i k4_nibbles512(const uint8_t *qs, int j) {
	const __m512i qb = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(qs + 32 * j)));
	return _mm512_and_si512(_mm512_mask_srli_epi16(qb, 0xFFFF0000u, qb, 4), _mm512_set1_epi8(0xF));
}

// halves_add: the int32 lanes of a 512-bit register's two halves added: the
// 8 lanes ggml's AVX2 path sums.
HR_AVX512 static inline __attribute__((always_inline)) __m256i halves_add(__m512i v) {
	return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

// q4k_sm512: k4_scales_mins of up to 4 superblocks at once, one in each
// 128-bit lane of v (a Q4_K block's first 16 bytes: d, dmin, scales[12]):
// ggml's utmp shuffle as byte shuffles, masks and shifts, leaving each lane's
// 8 scales in its bytes 0..7 and its 8 mins in bytes 8..15. The scalar
// unpacking and the inserts that widen it cost more than the dot products of
// a superblock at one column.
HR_AVX512 static inline __attribute__((always_inline)) __m512i q4k_sm512(__m512i v) {
	// scales[b] is byte b + 4 of a lane. t1: the low bits of the scales (bytes
	// 0..3: scales[0..3], 4..7: scales[8..11]) and mins (8..11: scales[4..7],
	// 12..15: scales[8..11] >> 4); t2: the sources of bits 4..5 of scales 4..7
	// (scales[0..3] >> 6) and mins 4..7 (scales[4..7] >> 6).
	const __m512i i1 = _mm512_broadcast_i32x4(_mm_setr_epi8(4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15));
	const __m512i i2 = _mm512_broadcast_i32x4(_mm_setr_epi8(-1, -1, -1, -1, 4, 5, 6, 7, -1, -1, -1, -1, 8, 9, 10, 11));
	const __m512i m1 = _mm512_broadcast_i32x4(_mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
	__m512i t1 = _mm512_shuffle_epi8(v, i1);
	t1 = _mm512_and_si512(_mm512_mask_srli_epi32(t1, 0x8888, t1, 4), m1);
	const __m512i t2 = _mm512_srli_epi16(_mm512_shuffle_epi8(v, i2), 2);
	return _mm512_ternarylogic_epi32(t1, t2, _mm512_set1_epi8(0x30), 0xF8); // t1 | (t2 & 0x30)
}

// q4k_gemv_avx512: q4k_gemv with each 64-weight step of a row in one
// 512-bit register. Each 64 bytes of qs give two: their low nibbles (chunks
// 4h and 4h + 2 of the superblock, h = 0, 1) and their high nibbles (4h + 1,
// 4h + 3), each against the matching Q8_K quants (two 32-byte halves of two
// 64-byte loads) and scales; the superblocks' scales, mins and d of up to 4
// rows are unpacked together (q4k_sm512), and the float steps of rows 2p
// and 2p + 1 share 512-bit registers (each half is ggml's 256-bit FMA, the
// mins of each row a 128-bit lane of ggml's).
HR_AVX512 static inline __attribute__((always_inline)) void q4k_gemv_avx512(const char *x, size_t xs, int nbk,
									      const char *y, size_t ys, const int nr,
									      const int nc, float *out, size_t os) {
	const __m512i m4 = _mm512_set1_epi8(0xF);
	// Scale h, part (0: low nibbles, 1: high) of a row's unpacked bytes in
	// every lane: chunk 4h + part's int16 scale in the low half, 4h + 2 +
	// part's in the high.
	__m512i isc[2][2];
	_Pragma("GCC unroll 2")
	for (int h = 0; h < 2; h++) {
		_Pragma("GCC unroll 2")
		for (int part = 0; part < 2; part++) {
			const int s0 = 4 * h + part, s1 = s0 + 2;
			isc[h][part] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16((short)(0xFF00 | s0))),
							  _mm256_set1_epi16((short)(0xFF00 | s1)), 1);
		}
	}
	// The mins of each lane as int16.
	const __m512i imin = _mm512_broadcast_i32x4(_mm_setr_epi8(8, -1, 9, -1, 10, -1, 11, -1, 12, -1, 13, -1, 14, -1, 15, -1));
	// Words d_r (lanes 0..3) and dmin_r (4..7) of the rows' first 16 bytes.
	const __m512i idd = _mm512_castsi128_si512(_mm_setr_epi16(0, 8, 16, 24, 1, 9, 17, 25));
	__m512i idp[2];
	_Pragma("GCC unroll 2")
	for (int p = 0; p < 2; p++) {
		idp[p] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi32(2 * p)), _mm256_set1_epi32(2 * p + 1), 1);
	}
	const __m512i idmin = _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7);
	__m512 acc[2][4], acc_m[4];
	_Pragma("GCC unroll 4")
	for (int c = 0; c < nc; c++) {
		acc_m[c] = _mm512_setzero_ps();
		_Pragma("GCC unroll 2")
		for (int p = 0; p < (nr + 1) / 2; p++) {
			acc[p][c] = _mm512_setzero_ps();
		}
	}
	for (int i = 0; i < nbk; i++) {
		__m512i v = _mm512_zextsi128_si512(_mm_loadu_si128((const __m128i *)((const hr_block_q4_K *)x + i)));
		_Pragma("GCC unroll 4")
		for (int r = 1; r < nr; r++) {
			v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)((const hr_block_q4_K *)(x + r * xs) + i)), r);
		}
		const __m512i sm = q4k_sm512(v);
		const __m256 xdd = _mm256_cvtph_ps(_mm512_castsi512_si128(_mm512_permutexvar_epi16(idd, v)));
		__m512i sumi[4][4];
		_Pragma("GCC unroll 4")
		for (int r = 0; r < nr; r++) {
			_Pragma("GCC unroll 4")
			for (int c = 0; c < nc; c++) {
				sumi[r][c] = _mm512_setzero_si512();
			}
		}
		_Pragma("GCC unroll 2")
		for (int h = 0; h < 2; h++) {
			__m512i q8l[4], q8h[4];
			_Pragma("GCC unroll 4")
			for (int c = 0; c < nc; c++) {
				const int8_t *q8 = ((const hr_block_q8_K *)(y + c * ys) + i)->qs + 128 * h;
				const __m512i a = _mm512_loadu_si512((const void *)q8), b = _mm512_loadu_si512((const void *)(q8 + 64));
				q8l[c] = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(1, 0, 1, 0));
				q8h[c] = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(3, 2, 3, 2));
			}
			_Pragma("GCC unroll 4")
			for (int r = 0; r < nr; r++) {
				const hr_block_q4_K *xb = (const hr_block_q4_K *)(x + r * xs) + i;
				_mm_prefetch(x + nr * xs + ((2 * i + h) * nr + r) * 72, _MM_HINT_T0);
				const __m512i qb = _mm512_loadu_si512((const void *)(xb->qs + 64 * h));
				const __m512i lo = _mm512_and_si512(qb, m4), hi = _mm512_and_si512(_mm512_srli_epi16(qb, 4), m4);
				const __m512i smr = _mm512_shuffle_i32x4(sm, sm, 0x55 * r);
				const __m512i scl = _mm512_shuffle_epi8(smr, isc[h][0]), sch = _mm512_shuffle_epi8(smr, isc[h][1]);
				_Pragma("GCC unroll 4")
				for (int c = 0; c < nc; c++) {
					sumi[r][c] = _mm512_dpwssd_epi32(sumi[r][c], scl, _mm512_maddubs_epi16(lo, q8l[c]));
					sumi[r][c] = _mm512_dpwssd_epi32(sumi[r][c], sch, _mm512_maddubs_epi16(hi, q8h[c]));
				}
			}
		}
		const __m512i mins = _mm512_shuffle_epi8(sm, imin);
		_Pragma("GCC unroll 4")
		for (int c = 0; c < nc; c++) {
			const hr_block_q8_K *yb = (const hr_block_q8_K *)(y + c * ys) + i;
			const __m512i q8s = _mm512_broadcast_i32x4(q8k_bsums(yb));
			// d = y.d * x.d and dmin = -y.d * x.dmin, each one rounding, as ggml.
			const __m512 dd = _mm512_castps256_ps512(
			    _mm256_mul_ps(_mm256_set_m128(_mm_set1_ps(-yb->d), _mm_set1_ps(yb->d)), xdd));
			acc_m[c] = _mm512_fmadd_ps(_mm512_permutexvar_ps(idmin, dd), _mm512_cvtepi32_ps(_mm512_madd_epi16(mins, q8s)),
						   acc_m[c]);
			_Pragma("GCC unroll 2")
			for (int p = 0; p < (nr + 1) / 2; p++) {
				const __m512i s0 = sumi[2 * p][c], s1 = 2 * p + 1 < nr ? sumi[2 * p + 1][c] : _mm512_setzero_si512();
				const __m512i sum = _mm512_add_epi32(_mm512_shuffle_i64x2(s0, s1, _MM_SHUFFLE(1, 0, 1, 0)),
								     _mm512_shuffle_i64x2(s0, s1, _MM_SHUFFLE(3, 2, 3, 2)));
				acc[p][c] = _mm512_fmadd_ps(_mm512_permutexvar_ps(idp[p], dd), _mm512_cvtepi32_ps(sum), acc[p][c]);
			}
		}
	}
	_Pragma("GCC unroll 4")
	for (int r = 0; r < nr; r++) {
		_Pragma("GCC unroll 4")
		for (int c = 0; c < nc; c++) {
			const __m512 a = acc[r / 2][c];
			const __m256 ar = r % 2 ? _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)) : _mm512_castps512_ps256(a);
			const __m128 am = _mm512_extractf32x4_ps(acc_m[c], r);
			out[c * os + r] = hsum8(ar) + hsum4(am);
		}
	}
}

// q5k_gemv_avx512: q5k_gemv with each 64-weight step of a row in one
// 512-bit register, as q4k_gemv_avx512 (the fifth bits of chunk 2j from bit
// 2j of qh, of chunk 2j + 1 from bit 2j + 1).
HR_AVX512 static inline __attribute__((always_inline)) void q5k_gemv_avx512(const char *x, size_t xs, int nbk,
									      const char *y, size_t ys, const int nr,
									      const int nc, float *out, size_t os) {
	const __m512i mone = _mm512_set1_epi8(1);
	__m256 acc[4][4];
	float summs[4][4];
	_Pragma("GCC unroll 4")
	for (int r = 0; r < nr; r++) {
		_Pragma("GCC unroll 4")
		for (int c = 0; c < nc; c++) {
			acc[r][c] = _mm256_setzero_ps();
			summs[r][c] = 0.0f;
		}
	}
	for (int i = 0; i < nbk; i++) {
		__m512i scales[4], hbits[4], sumi[4][4];
		__m128i mins[4];
		_Pragma("GCC unroll 4")
		for (int r = 0; r < nr; r++) {
			const hr_block_q5_K *xb = (const hr_block_q5_K *)(x + r * xs) + i;
			__m256i sc;
			k4_scales_mins(xb->scales, &sc, &mins[r]);
			scales[r] = _mm512_broadcast_i64x4(sc);
			hbits[r] = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)xb->qh));
			_Pragma("GCC unroll 4")
			for (int c = 0; c < nc; c++) {
				sumi[r][c] = _mm512_setzero_si512();
			}
		}
		q5k_block_mins(x, xs, i, y, ys, nr, nc, mins, summs);
		_Pragma("GCC unroll 1")
		for (int j = 0; j < 4; j++) {
			__m512i q8[4];
			_Pragma("GCC unroll 4")
			for (int c = 0; c < nc; c++) {
				q8[c] = _mm512_loadu_si512((const void *)(((const hr_block_q8_K *)(y + c * ys) + i)->qs + 64 * j));
			}
			_Pragma("GCC unroll 4")
			for (int r = 0; r < nr; r++) {
				const hr_block_q5_K *xb = (const hr_block_q5_K *)(x + r * xs) + i;
				_mm_prefetch(x + nr * xs + ((4 * i + j) * nr + r) * 44, _MM_HINT_T0);
				const __m512i hs = _mm512_srli_epi16(hbits[r], 2 * j);
				const __m512i h = _mm512_mask_srli_epi16(hs, 0xFFFF0000u, hs, 1);
				const __m512i q5 =
				    _mm512_add_epi8(k4_nibbles512(xb->qs, j), _mm512_slli_epi16(_mm512_and_si512(h, mone), 4));
				const __m512i sc = k4_scale512(scales[r], j);
				_Pragma("GCC unroll 4")
				for (int c = 0; c < nc; c++) {
					sumi[r][c] = _mm512_dpwssd_epi32(sumi[r][c], sc, _mm512_maddubs_epi16(q5, q8[c]));
				}
			}
		}
		_Pragma("GCC unroll 4")
		for (int c = 0; c < nc; c++) {
			const hr_block_q8_K *yb = (const hr_block_q8_K *)(y + c * ys) + i;
			_Pragma("GCC unroll 4")
			for (int r = 0; r < nr; r++) {
				const float d = yb->d * _cvtsh_ss(((const hr_block_q5_K *)(x + r * xs) + i)->d);
				acc[r][c] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(halves_add(sumi[r][c])), acc[r][c]);
			}
		}
	}
	_Pragma("GCC unroll 4")
	for (int r = 0; r < nr; r++) {
		_Pragma("GCC unroll 4")
		for (int c = 0; c < nc; c++) {
			out[c * os + r] = hsum8(acc[r][c]) + summs[r][c];
		}
	}
}

// q6k_quants512: chunks 2m and 2m + 1 (m = 0..3) of a Q6_K superblock, as
// q6k_quants makes each, in the low and high halves.
HR_AVX512 static inline __attribute__((always_inline)) __m512i q6k_quants512(const hr_block_q6_K *xb, int m) {
	const __m512i m4 = _mm512_set1_epi8(0xF), m2 = _mm512_set1_epi8(3);
	const int j = m / 2;
	const unsigned sh = 4 * (m % 2);
	const __m512i lo = _mm512_loadu_si512((const void *)(xb->ql + 64 * j));
	const __m512i hb = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(xb->qh + 32 * j)));
	const __m512i hi = _mm512_mask_srli_epi16(_mm512_srli_epi16(hb, sh), 0xFFFF0000u, _mm512_srli_epi16(hb, sh), 2);
	return _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(lo, sh), m4),
			       _mm512_slli_epi16(_mm512_and_si512(hi, m2), 4));
}

// q6k_scale512: q6k_scale(2m) in the low half, q6k_scale(2m + 1) in the high,
// of scales (the block's 16 scales in both 128-bit lanes).
HR_AVX512 static inline __attribute__((always_inline)) __m512i q6k_scale512(__m256i scales, int m) {
	const long long s0 = (long long)(0x0101010101010101ULL * (4 * m)), s1 = (long long)(0x0101010101010101ULL * (4 * m + 1)),
			s2 = (long long)(0x0101010101010101ULL * (4 * m + 2)), s3 = (long long)(0x0101010101010101ULL * (4 * m + 3));
	return _mm512_cvtepi8_epi16(_mm256_shuffle_epi8(scales, _mm256_set_epi64x(s3, s2, s1, s0)));
}

// q6k_gemv_avx512: q6k_gemv with two chunks of a row in one 512-bit register.
HR_AVX512 static inline __attribute__((always_inline)) void q6k_gemv_avx512(const char *x, size_t xs, int nbk,
									      const char *y, size_t ys, const int nr,
									      const int nc, float *out, size_t os) {
	const __m512i m32s = _mm512_set1_epi8(32);
	__m256 acc[4][4];
	_Pragma("GCC unroll 4")
	for (int r = 0; r < nr; r++) {
		_Pragma("GCC unroll 4")
		for (int c = 0; c < nc; c++) {
			acc[r][c] = _mm256_setzero_ps();
		}
	}
	for (int i = 0; i < nbk; i++) {
		__m512i sumi[4][4];
		__m256i scales[4];
		_Pragma("GCC unroll 4")
		for (int r = 0; r < nr; r++) {
			scales[r] = _mm256_broadcastsi128_si256(
			    _mm_loadu_si128((const __m128i *)((const hr_block_q6_K *)(x + r * xs) + i)->scales));
			_Pragma("GCC unroll 4")
			for (int c = 0; c < nc; c++) {
				sumi[r][c] = _mm512_setzero_si512();
			}
		}
		_Pragma("GCC unroll 1")
		for (int m = 0; m < 4; m++) {
			__m512i q8[4], q8s[4];
			_Pragma("GCC unroll 4")
			for (int c = 0; c < nc; c++) {
				q8[c] = _mm512_loadu_si512((const void *)(((const hr_block_q8_K *)(y + c * ys) + i)->qs + 64 * m));
				q8s[c] = _mm512_maddubs_epi16(m32s, q8[c]);
			}
			_Pragma("GCC unroll 4")
			for (int r = 0; r < nr; r++) {
				const hr_block_q6_K *xb = (const hr_block_q6_K *)(x + r * xs) + i;
				_mm_prefetch(x + nr * xs + ((4 * i + m) * nr + r) * 53, _MM_HINT_T0);
				const __m512i q6 = q6k_quants512(xb, m), scale = q6k_scale512(scales[r], m);
				_Pragma("GCC unroll 4")
				for (int c = 0; c < nc; c++) {
					const __m512i p16 = _mm512_sub_epi16(_mm512_maddubs_epi16(q6, q8[c]), q8s[c]);
					sumi[r][c] = _mm512_dpwssd_epi32(sumi[r][c], scale, p16);
				}
			}
		}
		_Pragma("GCC unroll 4")
		for (int r = 0; r < nr; r++) {
			const float xd = _cvtsh_ss(((const hr_block_q6_K *)(x + r * xs) + i)->d);
			_Pragma("GCC unroll 4")
			for (int c = 0; c < nc; c++) {
				const float d = ((const hr_block_q8_K *)(y + c * ys) + i)->d * xd;
				acc[r][c] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(halves_add(sumi[r][c])), acc[r][c]);
			}
		}
	}
	_Pragma("GCC unroll 4")
	for (int r = 0; r < nr; r++) {
		_Pragma("GCC unroll 4")
		for (int c = 0; c < nc; c++) {
			out[c * os + r] = hsum8(acc[r][c]);
		}
	}
}

GEMV_ROWS(gemv_rows_avx512, HR_AVX512, q80_gemv_avx512, q4k_gemv_avx512, q5k_gemv_avx512, q6k_gemv_avx512, HR_AVX512_Q80R, HR_AVX512_Q4KR, HR_AVX512_Q5KR, HR_AVX512_Q6KR)

// gemm_chunk: rows [ch*HR_CHUNK_ROWS, +HR_CHUNK_ROWS) of the product of node.
static void gemm_chunk(const hr_gemm_node *node, struct ggml_tensor *dst, char *scratch, int64_t ch) {
	const struct ggml_tensor *w = dst->src[0], *q = dst->src[1];
	const int64_t m = w->ne[1], n = node->quant->n;
	const int64_t r0 = ch * HR_CHUNK_ROWS, r1 = r0 + HR_CHUNK_ROWS < m ? r0 + HR_CHUNK_ROWS : m;
	// Q5_K has no prompt kernel: its prompts run the token-step one on
	// the chunk's rows, HR_TOKEN_COLS columns at a time.
	if (n <= HR_TOKEN_COLS || w->type == GGML_TYPE_Q5_K) {
		for (int64_t c0 = 0; c0 < n; c0 += HR_TOKEN_COLS) {
			const int nc = n - c0 < HR_TOKEN_COLS ? (int)(n - c0) : HR_TOKEN_COLS;
			if (node->kernels == HR_KERNELS_AVX512) {
				gemv_rows_avx512(w, q, dst, r0, r1, c0, nc);
			} else {
				gemv_rows_avx2(w, q, dst, r0, r1, c0, nc);
			}
		}
		return;
	}
	if (w->type == GGML_TYPE_Q8_0) {
		for (int64_t r = r0; r < r1; r += 4) {
			const int nr = r1 - r < 4 ? (int)(r1 - r) : 4;
			quad_prepare(quad_at(scratch, w->ne[0] / 32, (int)((r - r0) / 4)),
				     (const char *)w->data + r * w->nb[1], w->nb[1], nr, (int)(w->ne[0] / 32));
		}
	}
	for (int64_t c0 = 0; c0 < n; c0 += HR_COL_BLOCK) {
		const int64_t c1 = c0 + HR_COL_BLOCK < n ? c0 + HR_COL_BLOCK : n;
		if (w->type == GGML_TYPE_Q8_0) {
			q80_rows(w, q, dst, r0, r1, c0, c1, scratch);
		} else {
			kquant_rows(w, q, dst, r0, r1, c0, c1);
		}
	}
}

// part_start: the first chunk of part p of parts (p = parts: the end).
static inline int64_t part_start(int64_t chunks, int parts, int p) { return chunks * p / parts; }

static void gemm_op(struct ggml_tensor *dst, int ith, int nth, void *ud) {
	(void)nth;
	hr_gemm_node *node = ud;
	const hr_gemm_node *qn = node->quant;
	char *scratch = (char *)dst->src[1]->data + (qn->n + ith * qn->scratch) * dst->src[1]->nb[1];
	for (int i = 0; i < node->parts; i++) {
		const int p = (ith + i) % node->parts;
		atomic_int *next = &node->part[p].next;
		const int64_t end = part_start(node->chunks, node->parts, p + 1);
		for (int64_t ch = atomic_fetch_add_explicit(next, 1, memory_order_relaxed); ch < end;
		     ch = atomic_fetch_add_explicit(next, 1, memory_order_relaxed)) {
			gemm_chunk(node, dst, scratch, ch);
		}
	}
}

static void quantize_op(struct ggml_tensor *dst, int ith, int nth, void *ud) {
	hr_gemm_node *node = ud;
	const struct ggml_tensor *x = dst->src[0];
	const ggml_from_float_t from_float = hr_cpu_traits(node->type)->from_float;
	for (int64_t r = ith; r < node->n; r += nth) {
		from_float((const float *)((const char *)x->data + r * x->nb[1]), (char *)dst->data + r * dst->nb[1],
			   x->ne[0]);
	}
	if (ith == 0) {
		const int parts = nth < HR_MAX_PARTS ? nth : HR_MAX_PARTS;
		for (int i = 0; i < node->n_reset; i++) {
			hr_gemm_node *g = node->reset[i];
			g->parts = parts;
			for (int p = 0; p < parts; p++) {
				atomic_store_explicit(&g->part[p].next, (int)part_start(g->chunks, parts, p),
						      memory_order_relaxed);
			}
		}
	}
}

static int gemm_supported(enum ggml_type type) {
	size_t block, vt_block;
	enum ggml_type vt;
	switch (type) {
	case GGML_TYPE_Q8_0: block = sizeof(hr_block_q8_0), vt = GGML_TYPE_Q8_0, vt_block = sizeof(hr_block_q8_0); break;
	case GGML_TYPE_Q4_K: block = sizeof(hr_block_q4_K), vt = GGML_TYPE_Q8_K, vt_block = sizeof(hr_block_q8_K); break;
	case GGML_TYPE_Q5_K: block = sizeof(hr_block_q5_K), vt = GGML_TYPE_Q8_K, vt_block = sizeof(hr_block_q8_K); break;
	case GGML_TYPE_Q6_K: block = sizeof(hr_block_q6_K), vt = GGML_TYPE_Q8_K, vt_block = sizeof(hr_block_q8_K); break;
	default: return 0;
	}
	return ggml_type_size(type) == block && hr_cpu_traits(type)->vec_dot_type == vt &&
	       ggml_type_size(vt) == vt_block;
}

static struct ggml_tensor *mul_mat(struct ggml_context *ctx, hr_gemm_arena **arena, hr_gemm_cache *cache,
				   struct ggml_tensor *w, struct ggml_tensor *x, int n_threads, int kernels) {
	// The kernels read w->data: a weight in a GPU's memory is ggml's.
	if (!w->buffer || !ggml_backend_buffer_is_host(w->buffer) || !hr_gemm_supported(w->type) ||
	    x->type != GGML_TYPE_F32 || x->ne[2] != 1 ||
	    x->ne[3] != 1 || w->ne[2] != 1 || w->ne[3] != 1 || x->nb[0] != sizeof(float) || w->ne[0] != x->ne[0] ||
	    w->ne[0] % ggml_blck_size(w->type) != 0) {
		return ggml_mul_mat(ctx, w, x);
	}
	const enum ggml_type vt = hr_cpu_traits(w->type)->vec_dot_type;
	// A quantization that already resets as many products as it can is not
	// shared further: the next product gets one of its own.
	const int full = cache->node && cache->node->n_reset == (int)(sizeof(cache->node->reset) /
								      sizeof(cache->node->reset[0]));
	if (cache->x != x || cache->type != vt || full) {
		hr_gemm_node *qn = arena_node(arena);
		if (!qn) {
			return ggml_mul_mat(ctx, w, x);
		}
		const size_t row = ggml_row_size(vt, x->ne[0]);
		qn->type = vt;
		qn->n = x->ne[1];
		qn->scratch = w->type == GGML_TYPE_Q8_0 && qn->n > HR_TOKEN_COLS ? (int64_t)((chunk_scratch_bytes(x->ne[0] / 32) + row - 1) / row) : 0;
		struct ggml_tensor *args[1] = {x};
		struct ggml_tensor *q = ggml_custom_4d(ctx, GGML_TYPE_I8, (int64_t)row, qn->n + n_threads * qn->scratch,
						       1, 1, args, 1, quantize_op, GGML_N_TASKS_MAX, qn);
		cache->x = x;
		cache->q = q;
		cache->type = vt;
		cache->node = qn;
	}
	hr_gemm_node *qn = cache->node, *gn = arena_node(arena);
	if (!gn) {
		return ggml_mul_mat(ctx, w, x);
	}
	qn->reset[qn->n_reset++] = gn;
	gn->quant = qn;
	gn->chunks = (w->ne[1] + HR_CHUNK_ROWS - 1) / HR_CHUNK_ROWS;
	gn->kernels = kernels;
	(*arena)->products++;
	struct ggml_tensor *args[2] = {w, cache->q};
	return ggml_custom_4d(ctx, GGML_TYPE_F32, w->ne[1], x->ne[1], 1, 1, args, 2, gemm_op, GGML_N_TASKS_MAX, gn);
}

#ifdef HR_GEMM_PRAGMA
#pragma GCC pop_options
#endif

int hr_gemm_supported(enum ggml_type type) { return hr_cpu_avx2() && gemm_supported(type); }

int hr_kernels_runs(int kernels) {
	switch (kernels) {
	case HR_KERNELS_GGML: return 1;
	case HR_KERNELS_AVX2: return hr_cpu_avx2();
	case HR_KERNELS_AVX512:
		__builtin_cpu_init();
		return hr_cpu_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
	default: return 0;
	}
}

struct ggml_tensor *hr_mul_mat(struct ggml_context *ctx, hr_gemm_arena **arena, hr_gemm_cache *cache,
			       struct ggml_tensor *w, struct ggml_tensor *x, int n_threads, int kernels) {
	return kernels != HR_KERNELS_GGML && hr_kernels_runs(kernels) ? mul_mat(ctx, arena, cache, w, x, n_threads, kernels)
								       : ggml_mul_mat(ctx, w, x);
}

#else // not x86-64: ggml's kernels

int hr_gemm_supported(enum ggml_type type) {
	(void)type;
	return 0;
}

int hr_kernels_runs(int kernels) { return kernels == HR_KERNELS_GGML; }

struct ggml_tensor *hr_mul_mat(struct ggml_context *ctx, hr_gemm_arena **arena, hr_gemm_cache *cache,
			       struct ggml_tensor *w, struct ggml_tensor *x, int n_threads, int kernels) {
	(void)arena;
	(void)cache;
	(void)n_threads;
	(void)kernels;
	return ggml_mul_mat(ctx, w, x);
}

#endif
