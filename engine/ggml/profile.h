// Measurement kernels for engine/profile: ggml's own CPU matmul kernels timed
// at a layer's shapes, a memory read loop, and the backend registry's devices.
// Owned by engine/profile; kept apart from engine.c so the two can change
// independently.
#ifndef HOMERING_PROFILE_H
#define HOMERING_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// hr_prof_matmul times ggml_mul_mat of a [k, rows] weight of the given ggml
// type by one F32 column (a decode step) on the CPU backend with n_threads.
// *hot_s is the time per full [k, rows] product with the weights in cache
// (per-row slope of two cache-resident sizes, so per-op overhead is left
// out); *cold_s, when cold_s is non-NULL, the measured time per product with
// the weights streamed from RAM (copies cycled through more than twice the
// last-level cache), per-op overhead included. Returns 0, or -1 with err set.
int hr_prof_matmul(int type, int64_t k, int64_t rows, int n_threads, double min_s,
		   double *hot_s, double *cold_s, char *err, int errlen);

// hr_prof_matmul_gpu is hr_prof_matmul on the gpu-th GPU of ggml's
// registry: hot with the weights in the GPU's L2, cold streamed from its
// memory.
int hr_prof_matmul_gpu(int gpu, int type, int64_t k, int64_t rows, double min_s,
		       double *hot_s, double *cold_s, char *err, int errlen);

// hr_prof_gpu_copy times copying n_floats F32 values into and out of the
// gpu-th GPU's memory (medians of reps copies each way).
int hr_prof_gpu_copy(int gpu, int64_t n_floats, int reps, double *to_gpu_s, double *from_gpu_s, char *err, int errlen);

// hr_prof_read sums n bytes (a multiple of 64) and returns the sum, so the
// compiler cannot drop the loads.
uint64_t hr_prof_read(const void *p, size_t n);

typedef struct {
	char name[64];
	char description[128];
	int type; // 1 = GPU, 2 = integrated GPU
	uint64_t free, total;
} hr_prof_gpu;

// hr_prof_gpus fills up to max GPU entries from ggml's backend registry and
// returns how many there are.
int hr_prof_gpus(hr_prof_gpu *out, int max);

// hr_prof_type_ok reports whether ggml can quantize and multiply type t on
// the CPU.
int hr_prof_type_ok(int t);

#ifdef __cplusplus
}
#endif
#endif
