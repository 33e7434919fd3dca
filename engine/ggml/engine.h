// The C half of the window engine: a transformer forward pass over layers
// [first, last) built on ggml's C API, op for op as llama.cpp builds it
// (src/models/{llama,qwen2,qwen3,qwen3moe,gemma2-iswa,gemma3,phi3,openai-moe-iswa}.cpp,
// src/llama-graph.cpp), so that the same
// kernels run on the same inputs in the same order and the logits are the same
// bits. The Go side validates every argument before calling in here: nothing
// in this file checks file contents, and a failed ggml assertion aborts.
#ifndef HOMERING_ENGINE_H
#define HOMERING_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum hr_arch {
	HR_ARCH_LLAMA = 0,
	HR_ARCH_QWEN2 = 1,
	HR_ARCH_QWEN3 = 2,
	HR_ARCH_QWEN3MOE = 3,
	HR_ARCH_GEMMA2 = 4,
	HR_ARCH_GEMMA3 = 5,
	HR_ARCH_PHI3 = 6,
	HR_ARCH_GPTOSS = 7 // llama.cpp's LLM_ARCH_OPENAI_MOE
};

typedef struct {
	int arch;
	int n_layer, n_embd, n_head, n_head_kv, n_embd_head, n_ff, n_vocab, n_rot;
	float norm_eps;
	int rope_type; // 0 = normal (llama), 2 = NEOX (qwen)
	int n_ctx_orig;
	float freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow;
	float kq_scale;
	// Mixture-of-experts layers (qwen3moe): n_expert experts of n_ff_exp,
	// n_expert_used routed per token; 0 for dense models.
	int n_expert, n_expert_used, n_ff_exp;
	// Gemma: inputs scaled by sqrt(n_embd), Q scaled by attn_scale before
	// the product (kq_scale is then 1), logits soft-capped as
	// cap*tanh(x/cap) where a cap is > 0 (attention: gemma2; final: gemma2,
	// and gemma3 when the file says so).
	float attn_scale, attn_softcap, final_softcap;
	// Sliding-window attention (llama_hparams::set_swa_pattern): with
	// n_swa > 0, layer il is a sliding-window layer when
	// il % swa_pattern < swa_pattern - 1, and there a token at p1 sees only
	// positions p0 with p1 - p0 < n_swa (LLAMA_SWA_TYPE_STANDARD). Those
	// layers rope with freq_base_swa, freq_scale_swa (gemma3's 10000 and 1;
	// gemma2's are the model's own).
	int n_swa, swa_pattern;
	float freq_base_swa, freq_scale_swa;
} hr_hparams;

// HR_LONGROPE_CTX_PAD is llama.cpp's padding of n_ctx (llama_context: a
// multiple of 256): phi3 takes rope_factors_long when the padded context
// exceeds n_ctx_orig (llama_model::get_rope_factors), else the short ones.
#define HR_LONGROPE_CTX_PAD 256

// HR_MAX_EXPERTS bounds n_expert (llama.cpp's LLAMA_MAX_EXPERTS) and
// HR_MAX_EXPERTS_USED n_expert_used (real models route to 8 or fewer).
#define HR_MAX_EXPERTS 512
#define HR_MAX_EXPERTS_USED 64

typedef struct {
	const char *name;
	int type;
	int n_dims;
	int64_t ne[4];
	uint64_t offset; // from the start of the mapping
} hr_tensor_desc;

typedef struct hr_model hr_model;
typedef struct hr_window hr_window;

// hr_model_new creates a tensor per descriptor, pointing into the mapping
// [base, base+size) (no copy), and the model's thread pool of n_threads.
hr_model *hr_model_new(void *base, size_t size, const hr_hparams *hp,
		       const hr_tensor_desc *descs, int n_descs, int n_threads,
		       char *err, size_t errlen);
void hr_model_free(hr_model *m);

// hr_type_ok says whether ggml knows the type and the CPU backend can multiply
// with it (a vec_dot kernel exists); blck/size return its block geometry.
int hr_type_info(int type, int64_t *blck, size_t *type_size, int *can_matmul);
const char *hr_type_name(int type);
int hr_gpu_count(void);
int hr_gpu_registered(void);
// hr_gpu_get is the i-th GPU ggml can use (a card seen through two libraries
// counts once, through the better library), or NULL.
struct ggml_backend_device;
struct ggml_backend_device *hr_gpu_get(int i);
// hr_load_backends loads ggml backend libraries (libggml-cuda.so, …) from dir.
void hr_load_backends(const char *dir);
// hr_yarn_attn_factor is llama_context's YaRN attention factor, in C float
// arithmetic so that it is the same bits.
float hr_yarn_attn_factor(float freq_scale);

typedef struct {
	int first, last;
	int embed, output, all_logits;
	int n_ctx; // KV cells; a multiple of 256 (as llama.cpp pads n_ctx)
	int n_threads;
	const int *gpu_layers;
	int n_gpu_layers;
	int output_gpu;  // 1: the output norm and head on the GPU too (needs output)
	int gpu;         // which GPU (hr_gpu_get's index) the GPU layers go to
	int kernels;     // the variant of our matrix kernels (gemm.h's HR_KERNELS_*); HR_KERNELS_GGML: ggml's
} hr_window_params;

hr_window *hr_window_new(hr_model *m, const hr_window_params *p, char *err,
			 size_t errlen);
void hr_window_free(hr_window *w);

// hr_window_eval runs n inputs at positions pos..pos+n-1 (tokens when the
// window embeds, else hidden F32 [n, n_embd]) and writes the hidden state
// [n, n_embd] or the logits [n_out, n_vocab] to out. Returns 0 or -1 (err).
int hr_window_eval(hr_window *w, const int32_t *tokens, const float *hidden,
		   int n, int pos, float *out, size_t out_floats, char *err,
		   size_t errlen);
// hr_window_kv_truncate forgets cells >= pos and zeroes them, so that a
// truncated cache holds exactly what a fresh one would.
void hr_window_kv_truncate(hr_window *w, int pos);

// hr_window_set_all_logits switches an output window between the logits of
// every input row and of the last only, for the evaluations that follow
// (a speculative verification wants every row; a prompt only its last).
void hr_window_set_all_logits(hr_window *w, int on);

// HR_ROW_ATTN_MAX is the most rows a batch attends row by row with
// hr_window_set_row_attn on: a speculative verification's.
#define HR_ROW_ATTN_MAX 9

// hr_window_set_row_attn makes the evaluations that follow of 2 to
// HR_ROW_ATTN_MAX rows attend row by row, as one-row evaluations do (the same
// bits as evaluating the rows one at a time); larger batches are unchanged.
void hr_window_set_row_attn(hr_window *w, int on);
int hr_window_kv_used(const hr_window *w);
size_t hr_window_kv_bytes(const hr_window *w);
// hr_window_dev_bytes is what the window holds on the CPU (gpu 0) or its
// GPU (gpu 1): what 0 = KV cache, 1 = compute buffers, 2 = weights copied.
size_t hr_window_dev_bytes(const hr_window *w, int gpu, int what);
// hr_window_gpu_free is what the window's GPU reports free now (0 without a
// GPU): beside what the window holds there, the map's "used of free".
size_t hr_window_gpu_free(const hr_window *w);
// hr_window_gpu_mapped is 1 when the GPU reads the mapping in place
// (unified memory) instead of a copy.
int hr_window_gpu_mapped(const hr_window *w);
size_t hr_window_compute_bytes(const hr_window *w);
// hr_window_gemm_products counts the matrix products of the window's current
// graph that run on gemm.c's kernels.
int hr_window_gemm_products(const hr_window *w);
// hr_window_attn_products counts the attention products over the KV cache
// of the window's current graph that run on attn.c's kernels.
int hr_window_attn_products(const hr_window *w);
// hr_window_graph_splits is the scheduler's number of splits (runs of nodes on
// one backend) of the window's current graph; 0 before the first evaluation.
int hr_window_graph_splits(const hr_window *w);
// hr_window_count_experts starts (on) or stops counting a MoE window's
// routed experts per layer, through the scheduler's eval callback (the graph
// then computes in runs up to each layer's selection). -1 without experts.
int hr_window_count_experts(hr_window *w, int on);
// hr_window_expert_counts is [n_layers][n_expert] picks since counting
// started, NULL when not counting.
const int64_t *hr_window_expert_counts(const hr_window *w);

#ifdef __cplusplus
}
#endif

#endif
