// Measurement kernels for engine/profile (see profile.h). Everything here runs
// ggml's own CPU kernels exactly as a window does (CPU backend, its thread
// pool for more than one thread), so the rates it reports are the rates a
// window gets.
#include "profile.h"
#include "cpu.h"
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

static void perr(char *err, int errlen, const char *msg) {
	if (err && errlen > 0) {
		snprintf(err, (size_t)errlen, "%s", msg);
	}
}

static double now_s(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int hr_prof_type_ok(int t) {
	switch (t) {
	case GGML_TYPE_F32: case GGML_TYPE_F16: case GGML_TYPE_BF16:
	case GGML_TYPE_Q4_0: case GGML_TYPE_Q4_1: case GGML_TYPE_Q5_0: case GGML_TYPE_Q5_1:
	case GGML_TYPE_Q8_0: case GGML_TYPE_Q2_K: case GGML_TYPE_Q3_K: case GGML_TYPE_Q4_K:
	case GGML_TYPE_Q5_K: case GGML_TYPE_Q6_K:
	case GGML_TYPE_IQ2_XXS: case GGML_TYPE_IQ2_XS: case GGML_TYPE_IQ2_S: case GGML_TYPE_IQ3_XXS:
	case GGML_TYPE_IQ3_S: case GGML_TYPE_IQ1_S: case GGML_TYPE_IQ4_NL: case GGML_TYPE_IQ4_XS:
	case GGML_TYPE_MXFP4:
		return 1;
	}
	return 0;
}

// fill_row writes one row of k weights of type t from src. The 2-bit and
// 1-bit i-quants are not quantized: ggml_quantize_init builds their codebook
// tables first (2-13 s on a laptop core), and their kernels' speed does not
// depend on which codebook points a block names, so their blocks are random
// bits with an ordinary scale (each block starts with its F16 d: 1.0).
// Every other type goes through ggml's quantizer; IQ3_XXS and IQ3_S (whose
// tables take ~0.1 s) with an importance matrix of ones.
static void fill_row(enum ggml_type t, const float *src, char *row, int64_t k, uint32_t *seed) {
	switch (t) {
	case GGML_TYPE_IQ2_XXS: case GGML_TYPE_IQ2_XS: case GGML_TYPE_IQ2_S: case GGML_TYPE_IQ1_S: {
		const size_t bs = ggml_type_size(t), rs = ggml_row_size(t, k);
		for (size_t i = 0; i < rs; i++) {
			*seed = *seed * 1664525u + 1013904223u;
			row[i] = (char)(*seed >> 24);
		}
		const ggml_fp16_t one = ggml_fp32_to_fp16(1.0f);
		for (size_t b = 0; b < rs; b += bs) memcpy(row + b, &one, sizeof(one));
		return;
	}
	default:
		break;
	}
	float *im = NULL;
	if (t == GGML_TYPE_IQ3_XXS || t == GGML_TYPE_IQ3_S) {
		im = malloc((size_t)k * sizeof(float));
		for (int64_t i = 0; im && i < k; i++) im[i] = 1.0f;
	}
	ggml_quantize_chunk(t, src, row, 0, 1, k, im);
	free(im);
}

// A small deterministic generator: the values only have to be ordinary
// numbers (no denormals, no NaN) for the kernels to run at their real speed.
static float rnd(uint32_t *s) {
	*s = *s * 1664525u + 1013904223u;
	return ((float)(*s >> 8) / 16777216.0f) * 2.0f - 1.0f;
}

static int cmp_double(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

typedef struct {
	struct ggml_context *ctx;
	ggml_backend_buffer_t buf;
	struct ggml_cgraph *gf;
} graph;

static void graph_free(graph *g) {
	if (g->buf) ggml_backend_buffer_free(g->buf);
	if (g->ctx) ggml_free(g->ctx);
	memset(g, 0, sizeof(*g));
}

// build makes n_w weights of [k, rows] and n_ops products (op i uses weight
// i % n_w), fills the weights with one quantized random row repeated and x
// with random values.
static int build(graph *g, ggml_backend_t be, int type, int64_t k, int64_t rows, int n_w, int n_ops,
		 char *err, int errlen) {
	memset(g, 0, sizeof(*g));
	size_t nt = (size_t)(n_w + 2 * n_ops + 4);
	struct ggml_init_params ip = {
		.mem_size = ggml_tensor_overhead() * nt + ggml_graph_overhead_custom(nt, false),
		.mem_buffer = NULL,
		.no_alloc = true,
	};
	g->ctx = ggml_init(ip);
	if (!g->ctx) {
		perr(err, errlen, "ggml_init failed");
		return -1;
	}
	struct ggml_tensor **w = calloc((size_t)n_w, sizeof(*w));
	if (!w) {
		perr(err, errlen, "out of memory");
		graph_free(g);
		return -1;
	}
	for (int i = 0; i < n_w; i++) {
		w[i] = ggml_new_tensor_2d(g->ctx, (enum ggml_type)type, k, rows);
	}
	struct ggml_tensor *x = ggml_new_tensor_2d(g->ctx, GGML_TYPE_F32, k, 1);
	g->gf = ggml_new_graph_custom(g->ctx, nt, false);
	for (int i = 0; i < n_ops; i++) {
		ggml_build_forward_expand(g->gf, ggml_mul_mat(g->ctx, w[i % n_w], x));
	}
	g->buf = ggml_backend_alloc_ctx_tensors(g->ctx, be);
	if (!g->buf) {
		free(w);
		perr(err, errlen, "could not allocate the benchmark's weights");
		graph_free(g);
		return -1;
	}
	uint32_t seed = 12345;
	float *src = malloc((size_t)k * sizeof(float));
	size_t rs = ggml_row_size((enum ggml_type)type, k);
	char *row = malloc(rs);
	if (!src || !row) {
		free(src);
		free(row);
		free(w);
		perr(err, errlen, "out of memory");
		graph_free(g);
		return -1;
	}
	for (int64_t i = 0; i < k; i++) src[i] = rnd(&seed);
	fill_row((enum ggml_type)type, src, row, k, &seed);
	if (ggml_backend_buffer_is_host(g->buf)) {
		for (int i = 0; i < n_w; i++) {
			char *d = (char *)w[i]->data;
			for (int64_t r = 0; r < rows; r++) memcpy(d + (size_t)r * rs, row, rs);
		}
		for (int64_t i = 0; i < k; i++) ((float *)x->data)[i] = rnd(&seed);
	} else {
		// Device memory: filled through the backend from one host copy.
		char *full = malloc(rs * (size_t)rows);
		if (!full) {
			free(src);
			free(row);
			free(w);
			perr(err, errlen, "out of memory");
			graph_free(g);
			return -1;
		}
		for (int64_t r = 0; r < rows; r++) memcpy(full + (size_t)r * rs, row, rs);
		for (int i = 0; i < n_w; i++) ggml_backend_tensor_set(w[i], full, 0, rs * (size_t)rows);
		free(full);
		for (int64_t i = 0; i < k; i++) src[i] = rnd(&seed);
		ggml_backend_tensor_set(x, src, 0, (size_t)k * sizeof(float));
	}
	free(src);
	free(row);
	free(w);
	return 0;
}

// run computes the graph repeatedly (one warm-up first) until min_s has
// passed and at least 3 timed runs are done; returns the median run time.
static double run(ggml_backend_t be, struct ggml_cgraph *gf, double min_s) {
	enum { MAXR = 64 };
	double t[MAXR];
	int n = 0;
	ggml_backend_graph_compute(be, gf);
	double start = now_s();
	while (n < MAXR && (n < 3 || now_s() - start < min_s)) {
		double a = now_s();
		ggml_backend_graph_compute(be, gf);
		t[n++] = now_s() - a;
	}
	qsort(t, (size_t)n, sizeof(double), cmp_double);
	return t[n / 2];
}

#define HOT_OPS 16
#define COLD_BYTES ((size_t)128 << 20)
#define GPU_HOT_BYTES ((size_t)4 << 20)
#define GPU_COLD_BYTES ((size_t)512 << 20)

// time_matmul measures on backend be: hot, the per-row slope between two
// weight sizes r1 and 3*r1 that stay in cache (HOT_OPS products per graph,
// so per-op costs — thread barriers, converting x, kernel launches — fall
// out), times rows; cold, when asked, the time per product with copies
// cycled through cold_bytes, more than any cache, per-op costs included.
static int time_matmul(ggml_backend_t be, int type, int64_t k, int64_t rows, int64_t r1, size_t cold_bytes,
		       double min_s, double *hot_s, double *cold_s, char *err, int errlen) {
	size_t rs = ggml_row_size((enum ggml_type)type, k);
	int64_t r2 = 3 * r1;
	double t1, t2;
	graph g;
	if (build(&g, be, type, k, r1, 1, HOT_OPS, err, errlen) != 0) return -1;
	t1 = run(be, g.gf, min_s / 4) / HOT_OPS;
	graph_free(&g);
	if (build(&g, be, type, k, r2, 1, HOT_OPS, err, errlen) != 0) return -1;
	t2 = run(be, g.gf, min_s / 4) / HOT_OPS;
	graph_free(&g);
	double per_row = (t2 - t1) / (double)(r2 - r1);
	if (per_row <= 0) per_row = t2 / (double)r2; // noise: fall back to the larger size's rate
	*hot_s = per_row * (double)rows;
	if (cold_s) {
		size_t wb = rs * (size_t)rows;
		int n_w = (int)((cold_bytes + wb - 1) / wb);
		if (n_w < 2) n_w = 2;
		if (build(&g, be, type, k, rows, n_w, n_w, err, errlen) != 0) return -1;
		*cold_s = run(be, g.gf, min_s / 2) / n_w;
		graph_free(&g);
	}
	return 0;
}

static int shape_ok(int type, int64_t k, int64_t rows, char *err, int errlen) {
	if (!hr_prof_type_ok(type) || k <= 0 || rows <= 0 || k % ggml_blck_size((enum ggml_type)type) != 0) {
		perr(err, errlen, "unsupported type or shape");
		return 0;
	}
	return 1;
}

int hr_prof_matmul(int type, int64_t k, int64_t rows, int n_threads, double min_s,
		   double *hot_s, double *cold_s, char *err, int errlen) {
	if (!shape_ok(type, k, rows, err, errlen)) {
		return -1;
	}
	if (n_threads < 1) {
		perr(err, errlen, "no threads");
		return -1;
	}
	// The CPU backend the engine runs on (cpu.h): the chosen variant's kernels.
	ggml_backend_t be = hr_cpu_init(n_threads);
	if (!be) {
		perr(err, errlen, "cannot start the CPU backend");
		return -1;
	}
	struct ggml_threadpool *tp = NULL;
	if (n_threads > 1) {
		struct ggml_threadpool_params tpp = ggml_threadpool_params_default(n_threads);
		tp = hr_cpu_threadpool_new(&tpp);
		if (!tp) {
			ggml_backend_free(be);
			perr(err, errlen, "ggml_threadpool_new failed");
			return -1;
		}
		hr_cpu_set_threadpool(be, tp);
	}
	// Hot sizes stay in each core's L2: 128 KiB and 384 KiB of weights per
	// thread.
	size_t rs = ggml_row_size((enum ggml_type)type, k);
	int64_t r1 = (int64_t)((128u << 10) * (size_t)n_threads / rs);
	if (r1 < 4 * n_threads) r1 = 4 * n_threads;
	int rc = time_matmul(be, type, k, rows, r1, COLD_BYTES, min_s, hot_s, cold_s, err, errlen);
	ggml_backend_free(be);
	if (tp) hr_cpu_threadpool_free(tp);
	return rc;
}

// gpu_backend starts a backend on the gpu-th GPU of engine.c's one list.
static ggml_backend_t gpu_backend(int gpu, char *err, int errlen) {
	ggml_backend_dev_t dev = hr_gpu_get(gpu);
	if (!dev) {
		perr(err, errlen, "no such GPU");
		return NULL;
	}
	ggml_backend_t be = ggml_backend_dev_init(dev, NULL);
	if (!be) {
		perr(err, errlen, "cannot start the GPU backend");
	}
	return be;
}

int hr_prof_matmul_gpu(int gpu, int type, int64_t k, int64_t rows, double min_s,
		       double *hot_s, double *cold_s, char *err, int errlen) {
	if (!shape_ok(type, k, rows, err, errlen)) {
		return -1;
	}
	ggml_backend_t be = gpu_backend(gpu, err, errlen);
	if (!be) {
		return -1;
	}
	// Hot sizes stay in the GPU's L2 (4 and 12 MiB); cold copies cycle
	// through 512 MiB, more than any GPU's L2, as a window's layers do.
	int64_t r1 = (int64_t)(GPU_HOT_BYTES / ggml_row_size((enum ggml_type)type, k));
	if (r1 < 64) r1 = 64;
	int rc = time_matmul(be, type, k, rows, r1, GPU_COLD_BYTES, min_s, hot_s, cold_s, err, errlen);
	ggml_backend_free(be);
	return rc;
}

int hr_prof_gpu_copy(int gpu, int64_t n_floats, int reps, double *to_gpu_s, double *from_gpu_s, char *err, int errlen) {
	if (n_floats <= 0 || reps < 1) {
		perr(err, errlen, "nothing to copy");
		return -1;
	}
	ggml_backend_t be = gpu_backend(gpu, err, errlen);
	if (!be) {
		return -1;
	}
	struct ggml_init_params ip = {ggml_tensor_overhead() * 2, NULL, true};
	struct ggml_context *ctx = ggml_init(ip);
	struct ggml_tensor *t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n_floats);
	ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, be);
	float *h = calloc((size_t)n_floats, sizeof(float));
	int rc = -1;
	if (!buf || !h) {
		perr(err, errlen, "cannot allocate the copy's buffers");
		goto out;
	}
	enum { MAXR = 256 };
	double up[MAXR], down[MAXR];
	if (reps > MAXR) reps = MAXR;
	ggml_backend_tensor_set(t, h, 0, ggml_nbytes(t)); // warm-up
	ggml_backend_tensor_get(t, h, 0, ggml_nbytes(t));
	for (int i = 0; i < reps; i++) {
		double a = now_s();
		ggml_backend_tensor_set(t, h, 0, ggml_nbytes(t));
		double b = now_s();
		ggml_backend_tensor_get(t, h, 0, ggml_nbytes(t));
		up[i] = b - a;
		down[i] = now_s() - b;
	}
	qsort(up, (size_t)reps, sizeof(double), cmp_double);
	qsort(down, (size_t)reps, sizeof(double), cmp_double);
	*to_gpu_s = up[reps / 2];
	*from_gpu_s = down[reps / 2];
	rc = 0;
out:
	free(h);
	if (buf) ggml_backend_buffer_free(buf);
	ggml_free(ctx);
	ggml_backend_free(be);
	return rc;
}

uint64_t hr_prof_read(const void *p, size_t n) {
	const uint64_t *q = (const uint64_t *)p;
	uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
	for (size_t i = 0; i + 8 <= n / 8; i += 8) {
		a0 += q[i]; a1 += q[i + 1]; a2 += q[i + 2]; a3 += q[i + 3];
		a4 += q[i + 4]; a5 += q[i + 5]; a6 += q[i + 6]; a7 += q[i + 7];
	}
	return a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7;
}

int hr_prof_gpus(hr_prof_gpu *out, int max) {
	int n = 0;
	for (ggml_backend_dev_t d; (d = hr_gpu_get(n)) != NULL;) {
		if (n < max) {
			hr_prof_gpu *g = &out[n];
			memset(g, 0, sizeof(*g));
			snprintf(g->name, sizeof(g->name), "%s", ggml_backend_dev_name(d));
			snprintf(g->description, sizeof(g->description), "%s", ggml_backend_dev_description(d));
			struct ggml_backend_dev_props props;
			memset(&props, 0, sizeof(props));
			ggml_backend_dev_get_props(d, &props);
			// Integrated: the registry's device type, or the flag ollama's
			// ggml adds for GPUs that report themselves as discrete.
			g->type = ggml_backend_dev_type(d) == GGML_BACKEND_DEVICE_TYPE_IGPU || props.integrated ? 2 : 1;
			size_t f = 0, tot = 0;
			ggml_backend_dev_memory(d, &f, &tot);
			g->free = f;
			g->total = tot;
		}
		n++;
	}
	return n;
}
