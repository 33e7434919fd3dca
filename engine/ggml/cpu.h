// The CPU backend the engine runs on, chosen once per process (issues 16 and
// 22): one of the variant libraries of ggml's CPU backend that
// build/gpu-lib.sh cpu builds from the pinned ollama module
// (libggml-cpu-x64/-haswell/-icelake.so, ggml-cpu-*.dll), each compiled for
// one ISA, or, when none is loaded, the CPU backend compiled into this
// binary (build/env.sh's ISA). Every CPU call of the engine (engine.c,
// profile.c, gemm.c) goes through here, so that the windows' backends, the
// model's thread pool (whose workers run the kernels), the weight buffers and
// gemm.c's quantization all come from the same copy of ggml-cpu.
#ifndef HOMERING_CPU_H
#define HOMERING_CPU_H

#include <stddef.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"

// hr_cpu_score loads the variant library at path only to ask its
// ggml_backend_score: 0 when this CPU lacks an instruction it was compiled
// for, higher for more features; -1 when it does not load (err says why).
int hr_cpu_score(const char *path, char *err, size_t errlen);
// hr_cpu_use registers the variant library at path (named variant) with
// ggml and makes it this process's CPU backend. Call it before anything
// below: once the built-in backend is in use, it refuses. 0 or -1 (err).
int hr_cpu_use(const char *path, const char *variant, char *err, size_t errlen);
// hr_cpu_variant names the CPU backend in use ("built-in" or the variant).
const char *hr_cpu_variant(void);
// hr_cpu_builtin_isa names the variant of the built-in backend's ISA.
const char *hr_cpu_builtin_isa(void);
// hr_cpu_avx2 says whether its kernels use AVX2, FMA and F16C.
int hr_cpu_avx2(void);
// hr_cpu_avx512 says whether they were compiled for AVX-512 F.
int hr_cpu_avx512(void);

ggml_backend_t hr_cpu_init(int n_threads);
struct ggml_threadpool *hr_cpu_threadpool_new(struct ggml_threadpool_params *p);
void hr_cpu_threadpool_free(struct ggml_threadpool *tp);
void hr_cpu_set_threadpool(ggml_backend_t be, struct ggml_threadpool *tp);
ggml_backend_buffer_t hr_cpu_buffer_from_ptr(void *ptr, size_t size);
ggml_backend_buffer_type_t hr_cpu_buffer_type(void);
const struct ggml_type_traits_cpu *hr_cpu_traits(enum ggml_type type);

#endif
