// See engine.h. Every graph-building step names the llama.cpp function it
// mirrors; keep them in step when the pinned ollama version moves.
#include "engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strings.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "cpu.h"
#include "gemm.h"
#include "attn.h"

// HR_KV_SPAN_PAD pads the number of cells a graph attends over (n_kv).
// llama.cpp pads it to 256 (llama_kv_cache::get_n_kv) so that its graphs
// repeat; we pad to 32, which keeps the logits bit-identical to llama.cpp's
// while a 128-token prefill attends over 128 cells instead of 256: cells
// past the last used one are masked to -inf, so soft_max writes exact zeros
// for them and each KQV dot product only gains trailing +0 terms, which leave
// every SIMD lane's partial sum unchanged (F16 vec_dot and tinyBLAS both
// accumulate per lane over k and reduce at the end; 32 is a multiple of their
// step). The KV cache is zeroed when created and truncated, so a masked
// cell never holds a NaN. engine/enginetest checks the bits.
#define HR_KV_SPAN_PAD 32
// HR_KV_SPAN_PAD_GPU is the padding of windows with GPU layers: llama.cpp's
// 256. Each new span rebuilds the graph, and on a GPU a rebuild costs more
// than the masked cells it saves (the scheduler's allocation and, on CUDA, a
// new CUDA graph): with 32, decode ran 3% behind llama.cpp on an H100.
#define HR_KV_SPAN_PAD_GPU 256
#define HR_PAD(x, n) (((x) + (n) - 1) / (n) * (n))
// HR_MAX_BATCH is window.go's MaxBatch: the most inputs one evaluation takes.
#define HR_MAX_BATCH 512

struct hr_model {
	hr_hparams hp;
	struct ggml_context *ctx;  // one tensor per GGUF tensor, data in the mapping
	ggml_backend_buffer_t buf; // CPU buffer over the mapping (not owned memory)
	struct ggml_threadpool *tp;
	void *base; // the mapping
	size_t size;
};

typedef struct {
	struct ggml_tensor *attn_norm, *wq, *wk, *wv, *wo, *bq, *bk, *bv, *bo;
	struct ggml_tensor *q_norm, *k_norm;
	struct ggml_tensor *ffn_norm, *gate, *up, *down, *gate_b, *up_b, *down_b;
	// Mixture of experts (qwen3moe): the router [n_embd, n_expert] and the
	// experts' stacked weights, 3-D [.., .., n_expert]. Only ggml's
	// ggml_mul_mat_id reads the stacks; gemm.c's kernels take 2-D weights.
	struct ggml_tensor *gate_inp, *gate_exps, *up_exps, *down_exps;
	// gpt-oss: the router's and the experts' biases ([n_expert],
	// [.., n_expert]) and the attention sinks, one logit per head.
	struct ggml_tensor *gate_inp_b, *gate_exps_b, *up_exps_b, *down_exps_b, *sinks;
	// phi3: Q, K and V in one [n_embd, n_embd + 2 n_embd_gqa] weight.
	struct ggml_tensor *wqkv;
	// rope frequency factors: llama's rope_freqs, phi3's long or short
	// LongRoPE factors (one tensor for all layers, as in the file).
	struct ggml_tensor *rope_freqs;
	// Gemma: RMS norms of the attention's and the FFN's outputs.
	struct ggml_tensor *attn_post_norm, *ffn_post_norm;
	struct ggml_tensor *k, *v; // KV cache: K [n_embd_gqa, n_ctx], V the same, read transposed
	int gpu;
	int swa; // a sliding-window layer (is_swa): its own mask and rope base
} hr_layer;

typedef struct {
	struct ggml_context *ctx; // graph metadata, in w->meta; NULL: no graph yet
	struct ggml_cgraph *gf;
	int n, n_out;
	int row_attn; // built with row_attn (hr_window_set_row_attn)
	int64_t n_kv;
	struct ggml_tensor *inp_tokens, *inp_embd, *inp_pos, *k_idxs, *v_idxs, *kq_mask, *out_ids, *out;
	struct ggml_tensor *kq_mask_swa; // the sliding-window layers' mask; NULL: none in the window
	hr_gemm_arena *gemm; // state of the graph's prompt-batch products (gemm.h)
	int attn;            // attention products on attn.c's kernels
} hr_graph;

struct hr_window {
	hr_model *m;
	hr_graph g;
	hr_window_params p;
	int row_attn; // batches of up to HR_ROW_ATTN_MAX rows attend row by row
	int n_layers;
	hr_layer *layers;
	struct ggml_tensor *tok_embd, *output_norm, *output, *output_b;

	ggml_backend_t cpu, gpu;
	ggml_backend_sched_t sched;
	struct ggml_context *kv_ctx[2], *w_ctx_gpu;
	ggml_backend_buffer_t kv_buf[2], w_buf_gpu;
	int gpu_mapped; // w_buf_gpu is the mapping itself (unified memory)

	size_t graph_size;
	void *meta;
	size_t meta_size;
	int used; // cells [0, used) hold positions [0, used)

	float *mask;
	size_t mask_cap;
	int64_t *idx;
	size_t idx_cap;
	int32_t *i32;
	size_t i32_cap;

	// expert_counts, when not NULL, counts the router's picks per window
	// layer and expert ([n_layers][n_expert]): hr_window_count_experts.
	int64_t *expert_counts;
};

static void seterr(char *err, size_t errlen, const char *msg) {
	if (err && errlen) {
		snprintf(err, errlen, "%s", msg);
	}
}

int hr_type_info(int type, int64_t *blck, size_t *type_size, int *can_matmul) {
	if (type < 0 || type >= GGML_TYPE_COUNT) {
		return 0;
	}
	const struct ggml_type_traits *tr = ggml_get_type_traits((enum ggml_type)type);
	if (tr == NULL || tr->blck_size <= 0 || tr->type_size == 0) {
		return 0;
	}
	*blck = tr->blck_size;
	*type_size = tr->type_size;
	const struct ggml_type_traits_cpu *tc = hr_cpu_traits((enum ggml_type)type);
	*can_matmul = (tc != NULL && tc->vec_dot != NULL) || type == GGML_TYPE_F32;
	return 1;
}

const char *hr_type_name(int type) {
	if (type < 0 || type >= GGML_TYPE_COUNT) {
		return "unknown";
	}
	return ggml_type_name((enum ggml_type)type);
}

// gpu_rank orders the libraries that can drive one card: the vendor's own
// first (CUDA, ROCm, Metal), Vulkan after.
static int gpu_rank(ggml_backend_dev_t d) {
	const char *n = ggml_backend_reg_name(ggml_backend_dev_backend_reg(d));
	if (!n) return 3;
	if (strcmp(n, "CUDA") == 0 || strcmp(n, "ROCm") == 0 || strcmp(n, "Metal") == 0 || strcmp(n, "MTL") == 0) return 0;
	if (strcmp(n, "Vulkan") == 0) return 2;
	return 1;
}

static int is_gpu(ggml_backend_dev_t d) {
	enum ggml_backend_dev_type t = ggml_backend_dev_type(d);
	return t == GGML_BACKEND_DEVICE_TYPE_GPU || t == GGML_BACKEND_DEVICE_TYPE_IGPU;
}

// same_card reports whether two devices are one card seen through two
// libraries: the same PCI bus id, or the same UUID.
static int same_card(ggml_backend_dev_t a, ggml_backend_dev_t b) {
	struct ggml_backend_dev_props pa, pb;
	memset(&pa, 0, sizeof(pa));
	memset(&pb, 0, sizeof(pb));
	ggml_backend_dev_get_props(a, &pa);
	ggml_backend_dev_get_props(b, &pb);
	if (pa.device_id && pb.device_id && pa.device_id[0] && strcasecmp(pa.device_id, pb.device_id) == 0) return 1;
	if (pa.id && pb.id && pa.id[0] && strcmp(pa.id, pb.id) == 0) return 1;
	return 0;
}

// hr_gpu_get is the one list of GPUs every part of the engine uses: the
// registry's GPU devices, a card seen through two libraries listed once,
// through the better one (CUDA over Vulkan), better libraries first.
ggml_backend_dev_t hr_gpu_get(int i) {
	const size_t n = ggml_backend_dev_count();
	for (int rank = 0; rank <= 3; rank++) {
		for (size_t j = 0; j < n; j++) {
			ggml_backend_dev_t d = ggml_backend_dev_get(j);
			if (!is_gpu(d) || gpu_rank(d) != rank) continue;
			int dup = 0;
			for (size_t k = 0; k < n && !dup; k++) {
				ggml_backend_dev_t o = ggml_backend_dev_get(k);
				if (o == d || !is_gpu(o)) continue;
				int ro = gpu_rank(o);
				if ((ro < rank || (ro == rank && k < j)) && same_card(d, o)) dup = 1;
			}
			if (!dup && i-- == 0) return d;
		}
	}
	return NULL;
}

int hr_gpu_count(void) {
	int n = 0;
	while (hr_gpu_get(n)) {
		n++;
	}
	return n;
}

// hr_gpu_registered counts the registry's GPU devices as the backends
// registered them: a card seen through two libraries twice.
int hr_gpu_registered(void) {
	int n = 0;
	for (size_t j = 0; j < ggml_backend_dev_count(); j++) {
		n += is_gpu(ggml_backend_dev_get(j));
	}
	return n;
}

void hr_load_backends(const char *dir) { ggml_backend_load_all_from_path(dir); }

float hr_yarn_attn_factor(float freq_scale) {
	const float factor = 1.0f / freq_scale;
	float a = factor <= 1.0f ? 1.0f : (0.1f * 1.0f * logf(factor) + 1.0f);
	a *= 1.0f / (1.0f + 0.1f * logf(factor));
	return a;
}

hr_model *hr_model_new(void *base, size_t size, const hr_hparams *hp,
		       const hr_tensor_desc *descs, int n_descs, int n_threads,
		       char *err, size_t errlen) {
	hr_model *m = calloc(1, sizeof(*m));
	if (!m) {
		seterr(err, errlen, "out of memory");
		return NULL;
	}
	m->hp = *hp;
	m->base = base;
	m->size = size;
	struct ggml_init_params ip = {
		.mem_size = ggml_tensor_overhead() * (size_t)(n_descs + 1),
		.mem_buffer = NULL,
		.no_alloc = true,
	};
	m->ctx = ggml_init(ip);
	if (!m->ctx) {
		seterr(err, errlen, "ggml_init failed");
		free(m);
		return NULL;
	}
	// The weights stay in the file's page cache: ggml sees the mapping as a
	// CPU buffer it does not own, marked WEIGHTS so the scheduler runs the
	// ops that use them where they live.
	m->buf = hr_cpu_buffer_from_ptr(base, size);
	ggml_backend_buffer_set_usage(m->buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
	for (int i = 0; i < n_descs; i++) {
		const hr_tensor_desc *d = &descs[i];
		struct ggml_tensor *t = ggml_new_tensor(m->ctx, (enum ggml_type)d->type, d->n_dims, d->ne);
		ggml_set_name(t, d->name);
		if (ggml_backend_tensor_alloc(m->buf, t, (char *)base + d->offset) != GGML_STATUS_SUCCESS) {
			seterr(err, errlen, "ggml_backend_tensor_alloc failed");
			hr_model_free(m);
			return NULL;
		}
	}
	struct ggml_threadpool_params tpp = ggml_threadpool_params_default(n_threads);
	// Idle workers sleep at once instead of spinning for new work (ggml's
	// default poll level 50 spins ~6.5M pause rounds, measured ~50 ms of a
	// core after every evaluation). A window's evaluations are separated by
	// network or sampling waits, where the spin only takes a core from the
	// process's other work; waking a sleeping worker costs microseconds
	// against an evaluation's milliseconds.
	tpp.poll = 0;
	m->tp = hr_cpu_threadpool_new(&tpp);
	if (!m->tp) {
		seterr(err, errlen, "ggml_threadpool_new failed");
		hr_model_free(m);
		return NULL;
	}
	return m;
}

void hr_model_free(hr_model *m) {
	if (!m) {
		return;
	}
	if (m->tp) {
		hr_cpu_threadpool_free(m->tp);
	}
	if (m->buf) {
		ggml_backend_buffer_free(m->buf);
	}
	if (m->ctx) {
		ggml_free(m->ctx);
	}
	free(m);
}

// hr_is_swa is llama_hparams::is_swa after set_swa_pattern(swa_pattern):
// every swa_pattern-th layer (the last of each group) attends to all
// positions, the others to the last n_swa.
static int hr_is_swa(const hr_hparams *hp, int il) {
	return hp->n_swa > 0 && hp->swa_pattern > 0 && il % hp->swa_pattern < hp->swa_pattern - 1;
}

// hr_masked_swa is llama_hparams::is_masked_swa for LLAMA_SWA_TYPE_STANDARD:
// position p0 is out of p1's window.
static int hr_masked_swa(const hr_hparams *hp, int p0, int p1) { return p1 - p0 >= hp->n_swa; }

// softcap is cap * tanh(x / cap), as llama.cpp builds it (gemma2's
// attention and the final logits).
static struct ggml_tensor *softcap(struct ggml_context *ctx, struct ggml_tensor *x, float cap) {
	x = ggml_scale(ctx, x, 1.0f / cap);
	x = ggml_tanh(ctx, x);
	return ggml_scale(ctx, x, cap);
}

static struct ggml_tensor *get(hr_model *m, const char *fmt, int il) {
	char name[GGML_MAX_NAME];
	snprintf(name, sizeof(name), fmt, il);
	return ggml_get_tensor(m->ctx, name);
}

// gpu_dup gives t's copy in the window's GPU weight context (created on first use).
static struct ggml_tensor *gpu_dup(hr_window *w, struct ggml_tensor *t) {
	if (t == NULL) {
		return NULL;
	}
	struct ggml_tensor *d = ggml_dup_tensor(w->w_ctx_gpu, t);
	ggml_set_name(d, t->name);
	return d;
}

// place gives a GPU layer's tensor its weights: the mapped bytes
// themselves on unified memory, else a copy into the GPU's buffer.
static void place(hr_window *w, struct ggml_tensor *dst, const struct ggml_tensor *src) {
	if (w->gpu_mapped) {
		ggml_backend_tensor_alloc(w->w_buf_gpu, dst, src->data);
	} else {
		ggml_backend_tensor_set(dst, src->data, 0, ggml_nbytes(src));
	}
}

int hr_window_gpu_mapped(const hr_window *w) { return w->gpu_mapped; }

void hr_window_free(hr_window *w) {
	if (!w) {
		return;
	}
	free(w->expert_counts);
	if (w->g.ctx) {
		ggml_free(w->g.ctx);
	}
	hr_gemm_arena_free(&w->g.gemm);
	if (w->sched) {
		ggml_backend_sched_free(w->sched);
	}
	for (int i = 0; i < 2; i++) {
		if (w->kv_buf[i]) {
			ggml_backend_buffer_free(w->kv_buf[i]);
		}
		if (w->kv_ctx[i]) {
			ggml_free(w->kv_ctx[i]);
		}
	}
	if (w->w_buf_gpu) {
		ggml_backend_buffer_free(w->w_buf_gpu);
	}
	if (w->w_ctx_gpu) {
		ggml_free(w->w_ctx_gpu);
	}
	if (w->cpu) {
		ggml_backend_free(w->cpu);
	}
	if (w->gpu) {
		ggml_backend_free(w->gpu);
	}
	free(w->layers);
	free(w->meta);
	free(w->mask);
	free(w->idx);
	free(w->i32);
	free(w);
}

static int build_graph(hr_window *w, int n, int64_t n_kv, int n_out, int reserve_only, char *err, size_t errlen);

static int n_gpu_of(const hr_window *w) {
	int n = 0;
	for (int i = 0; i < w->n_layers; i++) {
		n += w->layers[i].gpu;
	}
	return n;
}

// gpu_short words a failed GPU allocation as one sentence a person can act
// on: what did not fit, how much it needed (0: unknown), what is free.
static void gpu_short(hr_window *w, char *err, size_t errlen, const char *what, size_t need, int n_gpu) {
	size_t free_b = 0, total = 0;
	ggml_backend_dev_t dev = w->gpu ? ggml_backend_get_device(w->gpu) : NULL;
	if (dev) {
		ggml_backend_dev_memory(dev, &free_b, &total);
	}
	char needs[48] = "";
	if (need > 0) {
		snprintf(needs, sizeof(needs), " (%.0f MiB)", (double)need / (1 << 20));
	}
	if (err && errlen) {
		snprintf(err, errlen,
			 "the GPU %s has %.0f MiB free, too little for the %s%s of %d GPU layers: put fewer layers on the GPU",
			 dev ? ggml_backend_dev_name(dev) : "", (double)free_b / (1 << 20), what, needs, n_gpu);
	}
}

hr_window *hr_window_new(hr_model *m, const hr_window_params *p, char *err, size_t errlen) {
	const hr_hparams *hp = &m->hp;
	hr_window *w = calloc(1, sizeof(*w));
	if (!w) {
		seterr(err, errlen, "out of memory");
		return NULL;
	}
	w->m = m;
	w->p = *p;
	w->p.gpu_layers = NULL;
	w->n_layers = p->last - p->first;
	w->layers = calloc(w->n_layers > 0 ? w->n_layers : 1, sizeof(hr_layer));
	if (!w->layers) {
		seterr(err, errlen, "out of memory");
		hr_window_free(w);
		return NULL;
	}
	for (int i = 0; i < p->n_gpu_layers; i++) {
		int il = p->gpu_layers[i];
		if (il >= p->first && il < p->last) {
			w->layers[il - p->first].gpu = 1;
		}
	}
	// llama_model::load_tensors: names, and which are optional.
	for (int i = 0; i < w->n_layers; i++) {
		int il = p->first + i;
		hr_layer *L = &w->layers[i];
		L->attn_norm = get(m, "blk.%d.attn_norm.weight", il);
		L->wq = get(m, "blk.%d.attn_q.weight", il);
		L->wk = get(m, "blk.%d.attn_k.weight", il);
		L->wv = get(m, "blk.%d.attn_v.weight", il);
		L->wo = get(m, "blk.%d.attn_output.weight", il);
		L->bq = get(m, "blk.%d.attn_q.bias", il);
		L->bk = get(m, "blk.%d.attn_k.bias", il);
		L->bv = get(m, "blk.%d.attn_v.bias", il);
		L->bo = get(m, "blk.%d.attn_output.bias", il);
		const int qwen3 = hp->arch == HR_ARCH_QWEN3 || hp->arch == HR_ARCH_QWEN3MOE;
		const int gemma = hp->arch == HR_ARCH_GEMMA2 || hp->arch == HR_ARCH_GEMMA3;
		if (qwen3 || hp->arch == HR_ARCH_GEMMA3) {
			L->q_norm = get(m, "blk.%d.attn_q_norm.weight", il);
			L->k_norm = get(m, "blk.%d.attn_k_norm.weight", il);
		}
		L->ffn_norm = get(m, "blk.%d.ffn_norm.weight", il);
		if (hp->arch == HR_ARCH_GPTOSS) {
			// Its FFN norm is named post_attention_norm.
			L->ffn_norm = get(m, "blk.%d.post_attention_norm.weight", il);
			L->sinks = get(m, "blk.%d.attn_sinks.weight", il);
			L->gate_inp_b = get(m, "blk.%d.ffn_gate_inp.bias", il);
			L->gate_exps_b = get(m, "blk.%d.ffn_gate_exps.bias", il);
			L->up_exps_b = get(m, "blk.%d.ffn_up_exps.bias", il);
			L->down_exps_b = get(m, "blk.%d.ffn_down_exps.bias", il);
		}
		if (hp->arch == HR_ARCH_PHI3) {
			L->wqkv = get(m, "blk.%d.attn_qkv.weight", il);
			L->wq = L->wk = L->wv = NULL;
			L->bq = L->bk = L->bv = L->bo = NULL;
			// llama_model::get_rope_factors, with n_ctx_seq the padded
			// context (one sequence).
			L->rope_freqs = ggml_get_tensor(m->ctx, HR_PAD(p->n_ctx, HR_LONGROPE_CTX_PAD) > hp->n_ctx_orig
									? "rope_factors_long.weight"
									: "rope_factors_short.weight");
		}
		if (hp->arch == HR_ARCH_QWEN3MOE || hp->arch == HR_ARCH_GPTOSS) {
			L->gate_inp = get(m, "blk.%d.ffn_gate_inp.weight", il);
			L->gate_exps = get(m, "blk.%d.ffn_gate_exps.weight", il);
			L->up_exps = get(m, "blk.%d.ffn_up_exps.weight", il);
			L->down_exps = get(m, "blk.%d.ffn_down_exps.weight", il);
		} else {
			L->gate = get(m, "blk.%d.ffn_gate.weight", il);
			L->up = get(m, "blk.%d.ffn_up.weight", il);
			L->down = get(m, "blk.%d.ffn_down.weight", il);
		}
		if (hp->arch == HR_ARCH_LLAMA) {
			L->gate_b = get(m, "blk.%d.ffn_gate.bias", il);
			L->up_b = get(m, "blk.%d.ffn_up.bias", il);
			L->down_b = get(m, "blk.%d.ffn_down.bias", il);
			L->rope_freqs = ggml_get_tensor(m->ctx, "rope_freqs.weight");
		}
		if (gemma) {
			L->attn_post_norm = get(m, "blk.%d.post_attention_norm.weight", il);
			L->ffn_post_norm = get(m, "blk.%d.post_ffw_norm.weight", il);
		}
		if (qwen3 || gemma) {
			L->bq = L->bk = L->bv = L->bo = NULL;
		}
		L->swa = hr_is_swa(hp, il);
	}
	if (p->embed) {
		w->tok_embd = ggml_get_tensor(m->ctx, "token_embd.weight");
	}
	if (p->output) {
		w->output_norm = ggml_get_tensor(m->ctx, "output_norm.weight");
		w->output = ggml_get_tensor(m->ctx, "output.weight");
		if (!w->output) {
			w->output = ggml_get_tensor(m->ctx, "token_embd.weight"); // tied embeddings
		}
		if (hp->arch == HR_ARCH_QWEN2) {
			w->output_b = ggml_get_tensor(m->ctx, "output.bias");
		}
	}

	const int n_gpu = n_gpu_of(w);
	const int out_gpu = p->output && p->output_gpu;
	if (n_gpu > 0 || out_gpu) {
		ggml_backend_dev_t dev = hr_gpu_get(p->gpu);
		if (!dev) {
			seterr(err, errlen, "no such GPU device");
			hr_window_free(w);
			return NULL;
		}
		w->gpu = ggml_backend_dev_init(dev, NULL);
		if (!w->gpu) {
			seterr(err, errlen, "cannot start the GPU backend");
			hr_window_free(w);
			return NULL;
		}
		struct ggml_init_params ip = {ggml_tensor_overhead() * (size_t)(n_gpu * 36 + 4), NULL, true};
		w->w_ctx_gpu = ggml_init(ip);
		// GPU layers get copies of their weights; the mapping stays the source.
		hr_layer *srcs = calloc(w->n_layers, sizeof(hr_layer));
		if (!srcs) {
			seterr(err, errlen, "out of memory");
			hr_window_free(w);
			return NULL;
		}
		memcpy(srcs, w->layers, w->n_layers * sizeof(hr_layer));
		// The output head is the largest single matrix of a model (n_vocab
		// rows): left on the CPU it reads more bytes per token than several
		// GPU layers together.
		struct ggml_tensor *out_src[3] = {w->output_norm, w->output, w->output_b};
		if (out_gpu) {
			w->output_norm = gpu_dup(w, w->output_norm);
			w->output = gpu_dup(w, w->output);
			w->output_b = gpu_dup(w, w->output_b);
		}
		for (int i = 0; i < w->n_layers; i++) {
			hr_layer *L = &w->layers[i];
			if (!L->gpu) {
				continue;
			}
			struct ggml_tensor **f[] = {&L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo, &L->bq, &L->bk, &L->bv,
						    &L->bo, &L->q_norm, &L->k_norm, &L->ffn_norm, &L->gate, &L->up,
						    &L->down, &L->gate_b, &L->up_b, &L->down_b, &L->rope_freqs,
						    &L->gate_inp, &L->gate_exps, &L->up_exps, &L->down_exps,
						    &L->gate_inp_b, &L->gate_exps_b, &L->up_exps_b, &L->down_exps_b,
						    &L->sinks, &L->wqkv,
						    &L->attn_post_norm, &L->ffn_post_norm};
			for (size_t j = 0; j < sizeof(f) / sizeof(f[0]); j++) {
				*f[j] = gpu_dup(w, *f[j]);
			}
		}
		// Unified memory (Apple silicon's Metal is the one backend here that
		// can): the GPU reads the mapping in place, so the GPU layers cost
		// no second copy of their weights and stay in the page cache.
		struct ggml_backend_dev_props props;
		memset(&props, 0, sizeof(props));
		ggml_backend_dev_get_props(dev, &props);
		if (props.caps.buffer_from_host_ptr) {
			size_t max_t = 0;
			for (struct ggml_tensor *t = ggml_get_first_tensor(m->ctx); t; t = ggml_get_next_tensor(m->ctx, t)) {
				max_t = ggml_nbytes(t) > max_t ? ggml_nbytes(t) : max_t;
			}
			w->w_buf_gpu = ggml_backend_dev_buffer_from_host_ptr(dev, m->base, m->size, max_t);
			w->gpu_mapped = w->w_buf_gpu != NULL;
		}
		if (!w->w_buf_gpu) {
			w->w_buf_gpu = ggml_backend_alloc_ctx_tensors(w->w_ctx_gpu, w->gpu);
		}
		if (!w->w_buf_gpu) {
			free(srcs);
			size_t need = 0;
			for (struct ggml_tensor *t = ggml_get_first_tensor(w->w_ctx_gpu); t; t = ggml_get_next_tensor(w->w_ctx_gpu, t)) {
				need += ggml_nbytes(t);
			}
			gpu_short(w, err, errlen, "weights", need, n_gpu);
			hr_window_free(w);
			return NULL;
		}
		ggml_backend_buffer_set_usage(w->w_buf_gpu, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
		for (int i = 0; i < w->n_layers; i++) {
			hr_layer *L = &w->layers[i], *S = &srcs[i];
			if (!L->gpu) {
				continue;
			}
			struct ggml_tensor *dst[] = {L->attn_norm, L->wq, L->wk, L->wv, L->wo, L->bq, L->bk, L->bv,
						     L->bo, L->q_norm, L->k_norm, L->ffn_norm, L->gate, L->up,
						     L->down, L->gate_b, L->up_b, L->down_b, L->rope_freqs,
						     L->gate_inp, L->gate_exps, L->up_exps, L->down_exps,
						     L->gate_inp_b, L->gate_exps_b, L->up_exps_b, L->down_exps_b,
						     L->sinks, L->wqkv,
						     L->attn_post_norm, L->ffn_post_norm};
			struct ggml_tensor *src[] = {S->attn_norm, S->wq, S->wk, S->wv, S->wo, S->bq, S->bk, S->bv,
						     S->bo, S->q_norm, S->k_norm, S->ffn_norm, S->gate, S->up,
						     S->down, S->gate_b, S->up_b, S->down_b, S->rope_freqs,
						     S->gate_inp, S->gate_exps, S->up_exps, S->down_exps,
						     S->gate_inp_b, S->gate_exps_b, S->up_exps_b, S->down_exps_b,
						     S->sinks, S->wqkv,
						     S->attn_post_norm, S->ffn_post_norm};
			for (size_t j = 0; j < sizeof(dst) / sizeof(dst[0]); j++) {
				if (dst[j]) {
					place(w, dst[j], src[j]);
				}
			}
		}
		if (out_gpu) {
			struct ggml_tensor *out_dst[3] = {w->output_norm, w->output, w->output_b};
			for (int j = 0; j < 3; j++) {
				if (out_dst[j]) {
					place(w, out_dst[j], out_src[j]);
				}
			}
		}
		free(srcs);
	}

	// KV cache per layer on the layer's device (llama_kv_cache constructor):
	// F16, K [n_embd_k_gqa, kv_size], V [n_embd_v_gqa, kv_size] read transposed.
	const int64_t n_embd_gqa = (int64_t)hp->n_embd_head * hp->n_head_kv;
	for (int dev = 0; dev < 2; dev++) {
		int cnt = 0;
		for (int i = 0; i < w->n_layers; i++) {
			cnt += (w->layers[i].gpu == dev);
		}
		if (cnt == 0) {
			continue;
		}
		struct ggml_init_params ip = {ggml_tensor_overhead() * (size_t)(2 * cnt + 1), NULL, true};
		w->kv_ctx[dev] = ggml_init(ip);
		for (int i = 0; i < w->n_layers; i++) {
			hr_layer *L = &w->layers[i];
			if (L->gpu != dev) {
				continue;
			}
			L->k = ggml_new_tensor_3d(w->kv_ctx[dev], GGML_TYPE_F16, n_embd_gqa, p->n_ctx, 1);
			L->v = ggml_new_tensor_3d(w->kv_ctx[dev], GGML_TYPE_F16, n_embd_gqa, p->n_ctx, 1);
			ggml_format_name(L->k, "cache_k_l%d", p->first + i);
			ggml_format_name(L->v, "cache_v_l%d", p->first + i);
		}
		w->kv_buf[dev] = dev ? ggml_backend_alloc_ctx_tensors(w->kv_ctx[dev], w->gpu)
				     : ggml_backend_alloc_ctx_tensors_from_buft(w->kv_ctx[dev], hr_cpu_buffer_type());
		if (!w->kv_buf[dev]) {
			if (dev) {
				gpu_short(w, err, errlen, "KV cache", (size_t)cnt * 2 * (size_t)n_embd_gqa * (size_t)p->n_ctx * 2, cnt);
			} else {
				seterr(err, errlen, "cannot allocate the KV cache");
			}
			hr_window_free(w);
			return NULL;
		}
		ggml_backend_buffer_clear(w->kv_buf[dev], 0);
	}

	// A window wholly on the GPU (its layers, and its head if it has one)
	// leaves the CPU nothing but the token embedding's row lookup and the
	// inputs: its CPU backend runs in the calling thread, since waking a
	// pool for one row costs more than the row on a fast GPU's ~1.4 ms token
	// step, and the inputs the GPU reads live in the GPU's pinned host memory,
	// as llama.cpp keeps them, so each copy is one DMA instead of a staged
	// copy of pageable memory. Windows with CPU layers keep pageable compute
	// buffers: pinned memory is locked, and theirs are large.
	// HOMERING_GPU_HOST=pageable restores the pool and pageable inputs (to
	// measure the difference: bench/device/gpu-cuda.sh).
	const int cpu_work = w->n_layers > n_gpu || (p->output && !out_gpu);
	const char *host_env = getenv("HOMERING_GPU_HOST");
	const int gpu_only = w->gpu && !cpu_work && !(host_env && strcmp(host_env, "pageable") == 0);
	const int cpu_threads = gpu_only ? 1 : p->n_threads;
	w->cpu = hr_cpu_init(cpu_threads);
	if (!w->cpu) {
		seterr(err, errlen, "cannot start the CPU backend");
		hr_window_free(w);
		return NULL;
	}
	// One thread needs no pool: ggml computes in the calling thread. A pool
	// would only have its idle workers poll for work beside it (measured:
	// ~1 ms per evaluation on a busy 2-core machine).
	if (cpu_threads > 1) {
		hr_cpu_set_threadpool(w->cpu, m->tp);
	}

	// Nodes per layer: 96 covers a dense layer; a MoE layer adds its
	// routing (~16 nodes) and a view and an add per expert used; a Gemma
	// layer its post-norms, Q scale and soft-capping.
	const int per_layer = 96 + (hp->n_expert > 0 ? 32 + 2 * hp->n_expert_used : 0) +
			      (hp->arch == HR_ARCH_GEMMA2 || hp->arch == HR_ARCH_GEMMA3 ? 16 : 0);
	// Row-by-row attention (hr_window_set_row_attn) adds up to 13 nodes
	// per row and layer, and attn.c's products 2 more per row (the
	// conversions of q and of the softmax).
	w->graph_size = (size_t)(w->n_layers * (per_layer + 15 * HR_ROW_ATTN_MAX) + 256);
	w->meta_size = ggml_tensor_overhead() * w->graph_size + ggml_graph_overhead_custom(w->graph_size, false);
	w->meta = malloc(w->meta_size);
	if (!w->meta) {
		seterr(err, errlen, "out of memory");
		hr_window_free(w);
		return NULL;
	}
	ggml_backend_t backends[2];
	ggml_backend_buffer_type_t bufts[2];
	int nb = 0;
	if (w->gpu) {
		bufts[nb] = ggml_backend_get_default_buffer_type(w->gpu);
		backends[nb++] = w->gpu;
	}
	bufts[nb] = ggml_backend_get_default_buffer_type(w->cpu);
	if (gpu_only) {
		ggml_backend_buffer_type_t host = ggml_backend_dev_host_buffer_type(ggml_backend_get_device(w->gpu));
		if (host) {
			bufts[nb] = host;
		}
	}
	backends[nb++] = w->cpu;
	// Op offload off: with it on, any batch of 32+ tokens moves the CPU
	// layers' operations to the GPU and copies their mmap'd weights there on
	// every evaluation (measured on lavapipe: 32 graph splits instead of 3),
	// a cost neither Halda nor prima.cpp's model charges for. CPU layers
	// compute where their weights are mapped.
	w->sched = ggml_backend_sched_new(backends, bufts, nb, w->graph_size, false, false);
	if (!w->sched) {
		seterr(err, errlen, "cannot create the scheduler");
		hr_window_free(w);
		return NULL;
	}
	if (w->gpu) {
		// Reserve the compute buffers of the largest evaluation now (a full
		// batch attending over the whole cache, as llama.cpp reserves), so a
		// window that does not fit in GPU memory fails here, at plan time,
		// never in the middle of a reply. Later graphs fit in these buffers.
		const int n = p->n_ctx < HR_MAX_BATCH ? p->n_ctx : HR_MAX_BATCH;
		const int n_out = p->output ? (p->all_logits ? n : 1) : n;
		char e2[160];
		if (build_graph(w, n, w->n_layers > 0 ? p->n_ctx : 0, n_out, 1, e2, sizeof(e2)) != 0) {
			gpu_short(w, err, errlen, "compute buffers", 0, n_gpu);
			hr_window_free(w);
			return NULL;
		}
	}
	return w;
}

static int grow(void **buf, size_t *cap, size_t need, size_t elem) {
	if (*cap >= need) {
		return 1;
	}
	void *nb = realloc(*buf, need * elem);
	if (!nb) {
		return 0;
	}
	*buf = nb;
	*cap = need;
	return 1;
}

// build_norm(LLM_NORM_RMS)
static struct ggml_tensor *rms(struct ggml_context *ctx, struct ggml_tensor *x, struct ggml_tensor *wt, float eps) {
	x = ggml_rms_norm(ctx, x, eps);
	if (wt) {
		x = ggml_mul(ctx, x, wt);
	}
	return x;
}

static struct ggml_tensor *add_opt(struct ggml_context *ctx, struct ggml_tensor *x, struct ggml_tensor *b) {
	return b ? ggml_add(ctx, x, b) : x;
}

// moe_ffn is llm_graph_context::build_moe_ffn as qwen3moe and gpt-oss call
// it (no expert groups, weights not scaled), given the router's logits
// [n_expert, n]. qwen3moe (SILU, SOFTMAX gating, weights normalised):
// softmax over the experts, the top n_expert_used by argsort, their
// probabilities divided by their (clamped) sum. gpt-oss
// (SWIGLU_OAI_MOE, SOFTMAX_WEIGHT gating, biases): the top n_expert_used
// by the biased logits, a softmax over just those, and each expert's
// bias added (ggml_add_id) after its product. Each chosen expert runs
// through ggml_mul_mat_id, and the weighted outputs are added in
// expert-slot order.
static struct ggml_tensor *moe_ffn(struct ggml_context *ctx, struct ggml_cgraph *gf, hr_window *w, hr_layer *L,
				   struct ggml_tensor *cur, struct ggml_tensor *logits) {
	const hr_hparams *hp = &w->m->hp;
	const int64_t n_embd = cur->ne[0], n = cur->ne[1];
	const int64_t n_used = hp->n_expert_used;
	const int oai = hp->arch == HR_ARCH_GPTOSS;
	logits = add_opt(ctx, logits, L->gate_inp_b);
	struct ggml_tensor *probs = oai ? logits : ggml_soft_max(ctx, logits); // [n_expert, n]
	struct ggml_tensor *selected = ggml_argsort_top_k(ctx, probs, (int)n_used); // [n_used, n]
	// The name count_cb looks for (hr_window_count_experts).
	ggml_format_name(selected, "hr_sel.%d", (int)(L - w->layers));
	probs = ggml_reshape_3d(ctx, probs, 1, hp->n_expert, n);
	struct ggml_tensor *weights = ggml_get_rows(ctx, probs, selected); // [1, n_used, n]
	if (oai) {
		weights = ggml_reshape_2d(ctx, weights, n_used, n);
		weights = ggml_soft_max(ctx, weights);
		weights = ggml_reshape_3d(ctx, weights, 1, n_used, n);
	} else {
		weights = ggml_reshape_2d(ctx, weights, n_used, n);
		struct ggml_tensor *sum = ggml_sum_rows(ctx, weights); // [1, n]
		// llama.cpp clamps to F16's smallest normal, against a division by 0.
		sum = ggml_clamp(ctx, sum, 6.103515625e-5f, INFINITY);
		weights = ggml_div(ctx, weights, sum);
		weights = ggml_reshape_3d(ctx, weights, 1, n_used, n);
	}
	ggml_build_forward_expand(gf, weights);

	cur = ggml_reshape_3d(ctx, cur, n_embd, 1, n);
	struct ggml_tensor *up = ggml_mul_mat_id(ctx, L->up_exps, cur, selected); // [n_ff_exp, n_used, n]
	if (L->up_exps_b) {
		up = ggml_add_id(ctx, up, L->up_exps_b, selected);
	}
	struct ggml_tensor *gate = ggml_mul_mat_id(ctx, L->gate_exps, cur, selected);
	if (L->gate_exps_b) {
		gate = ggml_add_id(ctx, gate, L->gate_exps_b, selected);
	}
	if (oai) {
		// llama.cpp's constants for LLM_FFN_SWIGLU_OAI_MOE (alpha, limit).
		cur = ggml_swiglu_oai(ctx, gate, up, 1.702f, 7.0f);
	} else {
		cur = ggml_swiglu_split(ctx, gate, up);
	}
	struct ggml_tensor *experts = ggml_mul_mat_id(ctx, L->down_exps, cur, selected); // [n_embd, n_used, n]
	if (L->down_exps_b) {
		experts = ggml_add_id(ctx, experts, L->down_exps_b, selected);
	}
	experts = ggml_mul(ctx, experts, weights);
	// The views first, then the adds: the order llama.cpp expands them in.
	struct ggml_tensor *views[HR_MAX_EXPERTS_USED];
	for (int64_t i = 0; i < n_used; i++) {
		views[i] = ggml_view_2d(ctx, experts, n_embd, n, experts->nb[2], (size_t)i * experts->nb[1]);
		ggml_build_forward_expand(gf, views[i]);
	}
	struct ggml_tensor *out = views[0];
	for (int64_t i = 1; i < n_used; i++) {
		out = ggml_add(ctx, out, views[i]);
	}
	if (n_used == 1) {
		out = ggml_cont(ctx, out); // a view is not contiguous
	}
	return out;
}

// build_graph builds the window's graph for n inputs attending over n_kv
// cells into w->g. The graph depends only on (n, n_kv): positions, cells and
// the mask are inputs, so consecutive decode steps reuse it (as llama.cpp
// reuses its graph) and skip the build and the scheduler's allocation.
// attend is llama.cpp's build_attn_mha (non-flash) over the permuted k, v
// and q with mask: the attention output, one row per query row. A one-row
// attention's two products run on attn.c's kernels of the window's variant
// (the same bits), counted in g->attn.
static struct ggml_tensor *attend(struct ggml_context *ctx, hr_graph *g, int kernels, const hr_hparams *hp,
				  const hr_layer *L, struct ggml_tensor *k, struct ggml_tensor *v, struct ggml_tensor *q,
				  struct ggml_tensor *mask) {
	struct ggml_tensor *kq = hr_attn_mul_mat(ctx, k, q, kernels, &g->attn);
	if (kq->op == GGML_OP_MUL_MAT) {
		ggml_mul_mat_set_prec(kq, GGML_PREC_F32);
	}
	if (hp->attn_softcap > 0.0f) {
		kq = softcap(ctx, kq, hp->attn_softcap);
	}
	kq = ggml_soft_max_ext(ctx, kq, mask, hp->kq_scale, 0.0f);
	ggml_soft_max_add_sinks(kq, L->sinks); // gpt-oss; NULL: none
	struct ggml_tensor *kqv = hr_attn_mul_mat(ctx, v, kq, kernels, &g->attn);
	struct ggml_tensor *cur = ggml_permute(ctx, kqv, 0, 2, 1, 3);
	return ggml_cont_2d(ctx, cur, cur->ne[0] * cur->ne[1], cur->ne[2] * cur->ne[3]);
}

static int build_graph(hr_window *w, int n, int64_t n_kv, int n_out, int reserve_only, char *err, size_t errlen) {
	hr_model *m = w->m;
	const hr_hparams *hp = &m->hp;
	const int64_t hd = hp->n_embd_head;
	const int64_t n_embd_gqa = hd * hp->n_head_kv;
	const int64_t kv_size = w->p.n_ctx;
	hr_graph *g = &w->g;
	if (g->ctx) {
		ggml_free(g->ctx);
	}
	hr_gemm_arena_free(&g->gemm);
	memset(g, 0, sizeof(*g));
	hr_gemm_cache mm_cache = {0};
	g->row_attn = w->row_attn && n > 1 && n <= HR_ROW_ATTN_MAX;
	// mm is ggml_mul_mat; Q8_0, Q4_K and Q6_K weights in CPU memory go
	// through gemm.c's kernels (the same bits, faster).
#define mm(W, X) hr_mul_mat(ctx, &g->gemm, &mm_cache, W, X, w->p.n_threads, w->p.kernels)

	struct ggml_init_params ip = {w->meta_size, w->meta, true};
	struct ggml_context *ctx = ggml_init(ip);
	if (!ctx) {
		seterr(err, errlen, "ggml_init failed");
		return -1;
	}
	g->ctx = ctx;
	struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, w->graph_size, false);
	g->gf = gf;
	g->n = n;
	g->n_kv = n_kv;
	g->n_out = n_out;

	// build_inp_embd
	struct ggml_tensor *cur;
	if (w->p.embed) {
		g->inp_tokens = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n);
		ggml_set_input(g->inp_tokens);
		cur = ggml_get_rows(ctx, w->tok_embd, g->inp_tokens);
		if (hp->arch == HR_ARCH_GEMMA2 || hp->arch == HR_ARCH_GEMMA3) {
			// Token embeddings only: a window fed hidden states gets them scaled.
			cur = ggml_scale(ctx, cur, sqrtf((float)hp->n_embd));
		}
	} else {
		g->inp_embd = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, hp->n_embd, n);
		ggml_set_input(g->inp_embd);
		cur = g->inp_embd;
	}
	struct ggml_tensor *inp_pos = NULL, *k_idxs = NULL, *v_idxs = NULL, *kq_mask = NULL, *out_ids = NULL;
	if (w->n_layers > 0) {
		inp_pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n); // build_inp_pos
		ggml_set_input(inp_pos);
		// build_attn_inp_kv_impl
		k_idxs = ggml_new_tensor_1d(ctx, GGML_TYPE_I64, n);
		ggml_set_input(k_idxs);
		v_idxs = ggml_new_tensor_1d(ctx, GGML_TYPE_I64, (int64_t)n * n_embd_gqa);
		ggml_set_input(v_idxs);
		// build_attn_inp_kv_iswa: sliding-window layers get a mask of
		// their own. A mask no layer of the window reads is not made: it
		// would get no buffer.
		int n_swa_layers = 0;
		for (int i = 0; i < w->n_layers; i++) {
			n_swa_layers += w->layers[i].swa;
		}
		if (n_swa_layers < w->n_layers) {
			kq_mask = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, n_kv, n, 1, 1);
			ggml_set_input(kq_mask);
		}
		if (n_swa_layers > 0) {
			g->kq_mask_swa = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, n_kv, n, 1, 1);
			ggml_set_input(g->kq_mask_swa);
		}
	}
	if (w->p.output) {
		out_ids = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n_out); // build_inp_out_ids
		ggml_set_input(out_ids);
	}
	g->inp_pos = inp_pos;
	g->k_idxs = k_idxs;
	g->v_idxs = v_idxs;
	g->kq_mask = kq_mask;
	g->out_ids = out_ids;

	struct ggml_tensor *inpL = cur;
	for (int i = 0; i < w->n_layers; i++) {
		const int il = w->p.first + i;
		hr_layer *L = &w->layers[i];
		struct ggml_tensor *inpSA = inpL;
		cur = rms(ctx, inpL, L->attn_norm, hp->norm_eps);

		struct ggml_tensor *Q, *K, *V;
		if (L->wqkv) { // phi3: views of one product, rows [Q | K | V]
			struct ggml_tensor *qkv = mm(L->wqkv, cur);
			const size_t fs = sizeof(float);
			Q = ggml_view_3d(ctx, qkv, hd, hp->n_head, n, hd * fs, qkv->nb[1], 0);
			K = ggml_view_3d(ctx, qkv, hd, hp->n_head_kv, n, hd * fs, qkv->nb[1], fs * hp->n_embd);
			V = ggml_view_3d(ctx, qkv, hd, hp->n_head_kv, n, hd * fs, qkv->nb[1], fs * (hp->n_embd + n_embd_gqa));
		} else {
			Q = add_opt(ctx, mm(L->wq, cur), L->bq);
			K = add_opt(ctx, mm(L->wk, cur), L->bk);
			V = add_opt(ctx, mm(L->wv, cur), L->bv);
			Q = ggml_reshape_3d(ctx, Q, hd, hp->n_head, n);
			K = ggml_reshape_3d(ctx, K, hd, hp->n_head_kv, n);
			V = ggml_reshape_3d(ctx, V, hd, hp->n_head_kv, n);
		}
		if (L->q_norm) { // qwen3: norm before rope
			Q = rms(ctx, Q, L->q_norm, hp->norm_eps);
		}
		// llama_model::get_rope_freq_base/scale: gemma3's sliding-window
		// layers have their own.
		const float fb = L->swa ? hp->freq_base_swa : hp->freq_base;
		const float fs = L->swa ? hp->freq_scale_swa : hp->freq_scale;
		Q = ggml_rope_ext(ctx, Q, inp_pos, L->rope_freqs, hp->n_rot, hp->rope_type, hp->n_ctx_orig, fb, fs,
				  hp->ext_factor, hp->attn_factor, hp->beta_fast, hp->beta_slow);
		if (L->k_norm) {
			K = rms(ctx, K, L->k_norm, hp->norm_eps);
		}
		K = ggml_rope_ext(ctx, K, inp_pos, L->rope_freqs, hp->n_rot, hp->rope_type, hp->n_ctx_orig, fb, fs,
				  hp->ext_factor, hp->attn_factor, hp->beta_fast, hp->beta_slow);
		if (hp->attn_scale != 0.0f) { // gemma: Q scaled here, kq_scale 1
			Q = ggml_scale(ctx, Q, hp->attn_scale);
		}

		// build_attn: same expand order as llama.cpp (the ISWA variant, for
		// models with sliding-window layers, expands K before V).
		ggml_build_forward_expand(gf, Q);
		if (hp->n_swa > 0) {
			ggml_build_forward_expand(gf, K);
			ggml_build_forward_expand(gf, V);
		} else {
			ggml_build_forward_expand(gf, V);
			ggml_build_forward_expand(gf, K);
		}
		{ // llama_kv_cache::cpy_k / cpy_v (V transposed: one row per element)
			struct ggml_tensor *kc = ggml_view_2d(ctx, K, n_embd_gqa, n, K->nb[2], 0);
			ggml_build_forward_expand(gf, ggml_set_rows(ctx, L->k, kc, k_idxs));
			// A view of phi3's fused product is not contiguous: cpy_v copies it.
			struct ggml_tensor *vc = V->nb[2] == ggml_row_size(V->type, n_embd_gqa)
							 ? ggml_reshape_2d(ctx, V, n_embd_gqa, n)
							 : ggml_cont_2d(ctx, V, n_embd_gqa, n);
			struct ggml_tensor *v_view = ggml_reshape_2d(ctx, L->v, 1, ggml_nelements(L->v));
			vc = ggml_reshape_2d(ctx, vc, 1, ggml_nelements(vc));
			ggml_build_forward_expand(gf, ggml_set_rows(ctx, v_view, vc, v_idxs));
		}
		// llama_kv_cache::get_k / get_v
		struct ggml_tensor *k = ggml_view_4d(ctx, L->k, hd, hp->n_head_kv, n_kv, 1,
						     ggml_row_size(L->k->type, hd),
						     ggml_row_size(L->k->type, n_embd_gqa),
						     ggml_row_size(L->k->type, n_embd_gqa * kv_size), 0);
		struct ggml_tensor *v = ggml_view_4d(ctx, L->v, n_kv, hp->n_head_kv, hd, 1,
						     ggml_row_size(L->v->type, kv_size * hd),
						     ggml_row_size(L->v->type, kv_size),
						     ggml_row_size(L->v->type, kv_size * n_embd_gqa), 0);
		// build_attn_mha, non-flash path
		k = ggml_permute(ctx, k, 0, 2, 1, 3);
		v = ggml_permute(ctx, v, 0, 2, 1, 3);
		struct ggml_tensor *mask = L->swa ? g->kq_mask_swa : kq_mask;
		if (g->row_attn) {
			// Each row attends as a one-row evaluation does: ggml's
			// products over the cache take another path (and sum in
			// another order) for several rows than for one, so a
			// speculative verification would round otherwise than the
			// decode steps it stands for.
			cur = NULL;
			for (int i = 0; i < n; i++) {
				struct ggml_tensor *qi = ggml_view_4d(ctx, Q, Q->ne[0], Q->ne[1], 1, 1, Q->nb[1], Q->nb[2], Q->nb[3],
								      (size_t)i * Q->nb[2]);
				struct ggml_tensor *mi = ggml_view_2d(ctx, mask, mask->ne[0], 1, mask->nb[1], (size_t)i * mask->nb[1]);
				struct ggml_tensor *r =
				    attend(ctx, g, w->p.kernels, hp, L, k, v, ggml_permute(ctx, qi, 0, 2, 1, 3), mi);
				cur = cur ? ggml_concat(ctx, cur, r, 1) : r;
			}
		} else {
			struct ggml_tensor *q = ggml_view_4d(ctx, Q, Q->ne[0], Q->ne[1], Q->ne[2], 1, Q->nb[1], Q->nb[2],
							     Q->nb[3], 0);
			cur = attend(ctx, g, w->p.kernels, hp, L, k, v, ggml_permute(ctx, q, 0, 2, 1, 3), mask);
		}
		ggml_build_forward_expand(gf, cur);
		cur = add_opt(ctx, mm(L->wo, cur), L->bo);

		if (il == hp->n_layer - 1 && out_ids) {
			cur = ggml_get_rows(ctx, cur, out_ids);
			inpSA = ggml_get_rows(ctx, inpSA, out_ids);
		}
		if (L->attn_post_norm) {
			cur = rms(ctx, cur, L->attn_post_norm, hp->norm_eps);
		}
		struct ggml_tensor *ffn_inp = ggml_add(ctx, cur, inpSA);
		cur = rms(ctx, ffn_inp, L->ffn_norm, hp->norm_eps);
		if (L->ffn_post_norm) {
			// build_ffn(GELU, PAR): gemma's gated FFN
			struct ggml_tensor *tmp = mm(L->up, cur);
			cur = mm(L->gate, cur);
			cur = ggml_geglu_split(ctx, cur, tmp);
			cur = mm(L->down, cur);
			cur = rms(ctx, cur, L->ffn_post_norm, hp->norm_eps);
		} else if (L->gate_inp) {
			cur = moe_ffn(ctx, gf, w, L, cur, mm(L->gate_inp, cur));
		} else if (!L->gate) {
			// build_ffn(SWIGLU, SEQ): phi3's ffn_up holds gate and up.
			cur = ggml_swiglu(ctx, mm(L->up, cur));
			cur = mm(L->down, cur);
		} else {
			// build_ffn(SILU, PAR)
			struct ggml_tensor *tmp = add_opt(ctx, mm(L->up, cur), L->up_b);
			cur = mm(L->gate, cur);
			if (L->gate_b) {
				cur = ggml_add(ctx, cur, L->gate_b);
				ggml_mul_mat_set_prec(cur, GGML_PREC_F32);
			}
			cur = ggml_swiglu_split(ctx, cur, tmp);
			cur = add_opt(ctx, mm(L->down, cur), L->down_b);
		}
		cur = ggml_add(ctx, cur, ffn_inp);
		inpL = cur;
	}
	cur = inpL;
	if (w->p.output) {
		if (w->n_layers == 0) {
			cur = ggml_get_rows(ctx, cur, out_ids);
		}
		cur = rms(ctx, cur, w->output_norm, hp->norm_eps);
		cur = mm(w->output, cur);
		cur = add_opt(ctx, cur, w->output_b);
		if (hp->final_softcap > 0.0f) {
			cur = softcap(ctx, cur, hp->final_softcap);
		}
	}
	ggml_set_output(cur);
	ggml_build_forward_expand(gf, cur);

	g->out = cur;
#undef mm

	ggml_backend_sched_reset(w->sched);
	// reserve_only sizes the buffers for the largest graph when a GPU
	// window is made: a failed reservation returns false, while
	// ggml_backend_sched_alloc_graph goes on after a failed re-reservation
	// of a multi-buffer graph and crashes (ggml_gallocr_init_tensor on a
	// NULL buffer, seen on lavapipe), so no later graph may need more. The
	// reserved graph is thrown away: reserving and then allocating the same
	// graph gave wrong logits (its tensors keep the reservation's places).
	if (reserve_only && !ggml_backend_sched_reserve(w->sched, gf)) {
		ggml_free(ctx);
		hr_gemm_arena_free(&g->gemm);
		memset(g, 0, sizeof(*g));
		seterr(err, errlen, "gpu");
		return -1;
	}
	if (reserve_only) {
		// Sized, not kept: the first evaluation builds its own graph.
		ggml_free(ctx);
		hr_gemm_arena_free(&g->gemm);
		memset(g, 0, sizeof(*g));
		return 0;
	}
	if (!ggml_backend_sched_alloc_graph(w->sched, gf)) {
		ggml_free(ctx);
		hr_gemm_arena_free(&g->gemm);
		memset(g, 0, sizeof(*g));
		seterr(err, errlen, "cannot allocate the compute graph (out of memory?)");
		return -1;
	}
	return 0;
}

int hr_window_eval(hr_window *w, const int32_t *tokens, const float *hidden, int n, int pos, float *out,
		   size_t out_floats, char *err, size_t errlen) {
	hr_model *m = w->m;
	const hr_hparams *hp = &m->hp;
	const int64_t n_embd_gqa = (int64_t)hp->n_embd_head * hp->n_head_kv;
	const int64_t kv_size = w->p.n_ctx;
	const int used_after = pos + n;
	int64_t n_kv = 0;
	if (w->n_layers > 0) {
		const int pad = w->gpu ? HR_KV_SPAN_PAD_GPU : HR_KV_SPAN_PAD;
		n_kv = HR_PAD(used_after, pad);
		if (n_kv < pad) {
			n_kv = pad;
		}
		if (n_kv > kv_size) {
			n_kv = kv_size;
		}
	}
	const int n_out = w->p.output ? (w->p.all_logits ? n : 1) : n;
	hr_graph *g = &w->g;
	const int row_attn = w->row_attn && n > 1 && n <= HR_ROW_ATTN_MAX;
	if (!g->ctx || g->n != n || g->n_kv != n_kv || g->n_out != n_out || g->row_attn != row_attn) {
		if (build_graph(w, n, n_kv, n_out, 0, err, errlen) != 0) {
			if (strcmp(err, "gpu") == 0) {
				gpu_short(w, err, errlen, "compute buffers", 0, n_gpu_of(w));
			}
			return -1;
		}
	}
	const size_t out_need = (size_t)ggml_nelements(g->out);
	if (out_need != out_floats) {
		seterr(err, errlen, "output size mismatch");
		return -1;
	}
	int ok = grow((void **)&w->i32, &w->i32_cap, (size_t)n, sizeof(int32_t));
	if (ok && w->n_layers > 0) {
		ok = grow((void **)&w->idx, &w->idx_cap, (size_t)n * n_embd_gqa, sizeof(int64_t)) &&
		     grow((void **)&w->mask, &w->mask_cap, (size_t)n_kv * n, sizeof(float));
	}
	if (!ok) {
		seterr(err, errlen, "out of memory");
		return -1;
	}
	if (g->inp_tokens) {
		ggml_backend_tensor_set(g->inp_tokens, tokens, 0, (size_t)n * sizeof(int32_t));
	}
	if (g->inp_embd) {
		ggml_backend_tensor_set(g->inp_embd, hidden, 0, (size_t)n * hp->n_embd * sizeof(float));
	}
	if (w->n_layers > 0) {
		for (int i = 0; i < n; i++) {
			w->i32[i] = pos + i;
		}
		ggml_backend_tensor_set(g->inp_pos, w->i32, 0, (size_t)n * sizeof(int32_t));
		for (int i = 0; i < n; i++) { // cell = position
			w->idx[i] = pos + i;
		}
		ggml_backend_tensor_set(g->k_idxs, w->idx, 0, (size_t)n * sizeof(int64_t));
		for (int i = 0; i < n; i++) { // llama_kv_cache::set_input_v_idxs, transposed V
			for (int64_t j = 0; j < n_embd_gqa; j++) {
				w->idx[(int64_t)i * n_embd_gqa + j] = j * kv_size + pos + i;
			}
		}
		ggml_backend_tensor_set(g->v_idxs, w->idx, 0, (size_t)n * n_embd_gqa * sizeof(int64_t));
		// llama_kv_cache::set_input_kq_mask: causal, cells [0, used_after) full.
		for (int i = 0; i < n; i++) {
			const int p1 = pos + i;
			float *row = w->mask + (size_t)i * n_kv;
			for (int64_t j = 0; j < n_kv; j++) {
				row[j] = (j < used_after && j <= p1) ? 0.0f : -INFINITY;
			}
		}
		if (g->kq_mask) {
			ggml_backend_tensor_set(g->kq_mask, w->mask, 0, (size_t)n_kv * n * sizeof(float));
		}
		if (g->kq_mask_swa) {
			// The same, less the positions out of each token's window. The
			// cache holds every position in its own cell (no ring of n_swa
			// cells as llama.cpp's SWA cache may reuse), so a truncation or
			// a kept prefix needs nothing more than this mask.
			for (int i = 0; i < n; i++) {
				const int p1 = pos + i;
				float *row = w->mask + (size_t)i * n_kv;
				for (int64_t j = 0; j < n_kv && j <= p1; j++) {
					if (hr_masked_swa(hp, (int)j, p1)) {
						row[j] = -INFINITY;
					}
				}
			}
			ggml_backend_tensor_set(g->kq_mask_swa, w->mask, 0, (size_t)n_kv * n * sizeof(float));
		}
	}
	if (g->out_ids) {
		for (int i = 0; i < n_out; i++) {
			w->i32[i] = n - n_out + i;
		}
		ggml_backend_tensor_set(g->out_ids, w->i32, 0, (size_t)n_out * sizeof(int32_t));
	}

	enum ggml_status st = ggml_backend_sched_graph_compute(w->sched, g->gf);
	if (st != GGML_STATUS_SUCCESS) {
		seterr(err, errlen, "graph compute failed");
		return -1;
	}
	ggml_backend_tensor_get(g->out, out, 0, out_need * sizeof(float));
	if (w->n_layers > 0) {
		w->used = used_after;
	}
	return 0;
}

// kv_zero_gpu zeroes V cells [pos, pos+cnt) of every GPU layer with one
// graph of ggml_set_rows on the GPU; falls back to memsets when it cannot
// allocate.
static void kv_zero_gpu(hr_window *w, int pos, int cnt, int64_t n_embd_gqa) {
	const int64_t rows = (int64_t)cnt * n_embd_gqa;
	const int n_gpu = n_gpu_of(w);
	struct ggml_init_params ip = {ggml_tensor_overhead() * (size_t)(4 * n_gpu + 8) + ggml_graph_overhead_custom((size_t)(4 * n_gpu + 8), false), NULL, true};
	struct ggml_context *ctx = ggml_init(ip);
	struct ggml_context *dctx = ggml_init((struct ggml_init_params){ggml_tensor_overhead() * 2, NULL, true});
	ggml_backend_buffer_t buf = NULL;
	int64_t *idx = NULL;
	if (!ctx || !dctx) {
		goto fallback;
	}
	struct ggml_tensor *zeros = ggml_new_tensor_2d(dctx, GGML_TYPE_F32, 1, rows);
	struct ggml_tensor *ids = ggml_new_tensor_1d(dctx, GGML_TYPE_I64, rows);
	buf = ggml_backend_alloc_ctx_tensors(dctx, w->gpu);
	idx = malloc((size_t)rows * sizeof(int64_t));
	if (!buf || !idx) {
		goto fallback;
	}
	ggml_backend_buffer_clear(buf, 0);
	for (int64_t j = 0; j < n_embd_gqa; j++) {
		for (int c = 0; c < cnt; c++) {
			idx[j * cnt + c] = j * w->p.n_ctx + pos + c;
		}
	}
	ggml_backend_tensor_set(ids, idx, 0, (size_t)rows * sizeof(int64_t));
	struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, (size_t)(4 * n_gpu + 8), false);
	for (int i = 0; i < w->n_layers; i++) {
		hr_layer *L = &w->layers[i];
		if (L->gpu) {
			struct ggml_tensor *v_view = ggml_reshape_2d(ctx, L->v, 1, ggml_nelements(L->v));
			ggml_build_forward_expand(gf, ggml_set_rows(ctx, v_view, zeros, ids));
		}
	}
	if (ggml_backend_graph_compute(w->gpu, gf) == GGML_STATUS_SUCCESS) {
		free(idx);
		ggml_backend_buffer_free(buf);
		ggml_free(dctx);
		ggml_free(ctx);
		return;
	}
fallback:
	free(idx);
	if (buf) ggml_backend_buffer_free(buf);
	if (dctx) ggml_free(dctx);
	if (ctx) ggml_free(ctx);
	const size_t es = sizeof(uint16_t);
	for (int i = 0; i < w->n_layers; i++) {
		hr_layer *L = &w->layers[i];
		if (L->gpu) {
			for (int64_t j = 0; j < n_embd_gqa; j++) {
				ggml_backend_tensor_memset(L->v, 0, ((size_t)j * w->p.n_ctx + pos) * es, (size_t)cnt * es);
			}
		}
	}
}

void hr_window_set_all_logits(hr_window *w, int on) {
	w->p.all_logits = w->p.output && on;
}

void hr_window_set_row_attn(hr_window *w, int on) { w->row_attn = on != 0; }

void hr_window_kv_truncate(hr_window *w, int pos) {
	if (pos < 0) {
		pos = 0;
	}
	if (pos >= w->used) {
		return;
	}
	const int64_t n_embd_gqa = (int64_t)w->m->hp.n_embd_head * w->m->hp.n_head_kv;
	const size_t es = sizeof(uint16_t);
	const size_t cnt = (size_t)(w->used - pos);
	int gpu_rows = 0;
	for (int i = 0; i < w->n_layers; i++) {
		hr_layer *L = &w->layers[i];
		ggml_backend_tensor_memset(L->k, 0, (size_t)pos * n_embd_gqa * es, cnt * n_embd_gqa * es);
		if (pos == 0) {
			// Cells past used are zero already: one call clears the lot.
			ggml_backend_tensor_memset(L->v, 0, 0, (size_t)n_embd_gqa * (size_t)w->used * es +
								      (size_t)(n_embd_gqa - 1) * (size_t)(w->p.n_ctx - w->used) * es);
		} else if (L->gpu) {
			gpu_rows = 1; // below: one graph for every GPU layer
		} else {
			// V is transposed (a row per element): host memsets are cheap.
			for (int64_t j = 0; j < n_embd_gqa; j++) {
				ggml_backend_tensor_memset(L->v, 0, ((size_t)j * w->p.n_ctx + pos) * es, cnt * es);
			}
		}
	}
	if (gpu_rows) {
		// On a GPU each memset is a synchronous copy (32,768 of them per
		// truncation on an 8B llama): the GPU layers' V cells are zeroed by
		// one graph of set_rows instead, as the cache is written.
		kv_zero_gpu(w, pos, (int)cnt, n_embd_gqa);
	}
	w->used = pos;
}

int hr_window_kv_used(const hr_window *w) { return w->used; }

size_t hr_window_kv_bytes(const hr_window *w) {
	size_t s = 0;
	for (int i = 0; i < 2; i++) {
		if (w->kv_buf[i]) {
			s += ggml_backend_buffer_get_size(w->kv_buf[i]);
		}
	}
	return s;
}

size_t hr_window_dev_bytes(const hr_window *w, int gpu, int what) {
	switch (what) {
	case 0: // KV cache
		return w->kv_buf[gpu ? 1 : 0] ? ggml_backend_buffer_get_size(w->kv_buf[gpu ? 1 : 0]) : 0;
	case 1: { // compute buffers
		ggml_backend_t be = gpu ? w->gpu : w->cpu;
		return be ? ggml_backend_sched_get_buffer_size(w->sched, be) : 0;
	}
	case 2: // weights copied to the device (the CPU's stay in the mapping)
		return gpu && w->w_buf_gpu && !w->gpu_mapped ? ggml_backend_buffer_get_size(w->w_buf_gpu) : 0;
	}
	return 0;
}

size_t hr_window_gpu_free(const hr_window *w) {
	size_t free_b = 0, total = 0;
	ggml_backend_dev_t dev = w->gpu ? ggml_backend_get_device(w->gpu) : NULL;
	if (dev) {
		ggml_backend_dev_memory(dev, &free_b, &total);
	}
	return free_b;
}

size_t hr_window_compute_bytes(const hr_window *w) {
	size_t s = 0;
	for (int i = 0; i < ggml_backend_sched_get_n_backends(w->sched); i++) {
		s += ggml_backend_sched_get_buffer_size(w->sched, ggml_backend_sched_get_backend(w->sched, i));
	}
	return s;
}

int hr_window_gemm_products(const hr_window *w) { return hr_gemm_products(w->g.gemm); }

int hr_window_attn_products(const hr_window *w) { return w->g.attn; }

// count_cb is the scheduler's eval callback while experts are counted: it
// asks to see each layer's top-k selection ("hr_sel.<layer>", I32
// [n_used, n]) and adds its picks to the counts. Only a selection in host
// memory is read (a GPU layer's is not counted).
static bool count_cb(struct ggml_tensor *t, bool ask, void *ud) {
	hr_window *w = ud;
	if (strncmp(t->name, "hr_sel.", 7) != 0) {
		return !ask;
	}
	if (ask) {
		return true;
	}
	const int il = atoi(t->name + 7);
	const int n_expert = w->m->hp.n_expert;
	if (!w->expert_counts || il < 0 || il >= w->n_layers || !t->buffer || !ggml_backend_buffer_is_host(t->buffer)) {
		return true;
	}
	for (int64_t i = 0; i < t->ne[1]; i++) {
		const char *row = (const char *)t->data + i * t->nb[1];
		for (int64_t j = 0; j < t->ne[0]; j++) {
			const int32_t e = *(const int32_t *)(row + j * t->nb[0]);
			if (e >= 0 && e < n_expert) {
				w->expert_counts[(size_t)il * n_expert + e]++;
			}
		}
	}
	return true;
}

int hr_window_count_experts(hr_window *w, int on) {
	const int n_expert = w->m->hp.n_expert;
	if (n_expert <= 0) {
		return -1;
	}
	if (!on) {
		ggml_backend_sched_set_eval_callback(w->sched, NULL, NULL);
		free(w->expert_counts);
		w->expert_counts = NULL;
		return 0;
	}
	if (!w->expert_counts) {
		w->expert_counts = calloc((size_t)(w->n_layers > 0 ? w->n_layers : 1) * n_expert, sizeof(int64_t));
		if (!w->expert_counts) {
			return -1;
		}
	}
	ggml_backend_sched_set_eval_callback(w->sched, count_cb, w);
	return 0;
}

const int64_t *hr_window_expert_counts(const hr_window *w) { return w->expert_counts; }

int hr_window_graph_splits(const hr_window *w) {
	return w->g.ctx ? ggml_backend_sched_get_n_splits(w->sched) : 0;
}
