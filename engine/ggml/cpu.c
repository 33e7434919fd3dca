// See cpu.h.
#include "cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#include <windows.h>
#else
#include <dlfcn.h>
#endif

typedef void (*set_n_threads_t)(ggml_backend_t, int);
typedef struct ggml_threadpool *(*tp_new_t)(struct ggml_threadpool_params *);
typedef void (*tp_free_t)(struct ggml_threadpool *);
typedef void (*set_tp_t)(ggml_backend_t, struct ggml_threadpool *);
typedef const struct ggml_type_traits_cpu *(*traits_t)(enum ggml_type);
typedef int (*score_t)(void);

// The one CPU backend of this process: the registry entry of a variant
// library (hr_cpu_use) or of the CPU backend compiled into this binary, and
// the functions of that same copy of ggml-cpu. Written once, before any
// model opens (the Go side holds a lock around the choice and opens no model
// before it); read everywhere after.
static struct {
	int init; // bound: the built-in backend until hr_cpu_use binds a variant
	int used; // something was made from it (a backend, pool or buffer): no change after
	ggml_backend_reg_t reg;
	ggml_backend_dev_t dev;
	set_n_threads_t set_n_threads;
	tp_new_t tp_new;
	tp_free_t tp_free;
	set_tp_t set_tp;
	traits_t traits;
	char variant[64];
	int avx2; // the backend's kernels use AVX2, FMA and F16C (so may gemm.c's)
	int avx512; // they were compiled for AVX-512 F (its F16 dot products sum 16 lanes)
} cpu;

static void seterr(char *err, size_t errlen, const char *fmt, const char *a, const char *b) {
	if (err && errlen) snprintf(err, errlen, fmt, a, b);
}

static int bind_reg(ggml_backend_reg_t reg, traits_t traits) {
	ggml_backend_dev_t dev = NULL;
	for (size_t i = 0; i < ggml_backend_reg_dev_count(reg); i++) {
		ggml_backend_dev_t d = ggml_backend_reg_dev_get(reg, i);
		if (ggml_backend_dev_type(d) == GGML_BACKEND_DEVICE_TYPE_CPU) {
			dev = d;
			break;
		}
	}
	set_n_threads_t sn = (set_n_threads_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads");
	tp_new_t tn = (tp_new_t)ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new");
	tp_free_t tf = (tp_free_t)ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_free");
	set_tp_t st = (set_tp_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_cpu_set_threadpool");
	if (!dev || !sn || !tn || !tf || !st || !traits) return 0;
	cpu.reg = reg, cpu.dev = dev, cpu.set_n_threads = sn, cpu.tp_new = tn, cpu.tp_free = tf, cpu.set_tp = st;
	cpu.traits = traits;
	// The backend's own list of what its kernels were compiled for.
	ggml_backend_get_features_t gf =
	    (ggml_backend_get_features_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features");
	int avx2 = 0, fma = 0, f16c = 0, avx512 = 0;
	for (struct ggml_backend_feature *f = gf ? gf(reg) : NULL; f && f->name; f++) {
		const int on = f->value && strcmp(f->value, "0") != 0;
		if (strcmp(f->name, "AVX2") == 0) avx2 = on;
		if (strcmp(f->name, "FMA") == 0) fma = on;
		if (strcmp(f->name, "F16C") == 0) f16c = on;
		if (strcmp(f->name, "AVX512") == 0) avx512 = on;
	}
	cpu.avx2 = avx2 && fma && f16c;
	cpu.avx512 = avx512;
	cpu.init = 1;
	return 1;
}

static void init_static(void) {
	if (cpu.init) return;
	bind_reg(ggml_backend_cpu_reg(), ggml_get_type_traits_cpu);
	snprintf(cpu.variant, sizeof(cpu.variant), "built-in");
}

#ifdef _WIN32
static wchar_t *wide(const char *s) {
	int n = MultiByteToWideChar(CP_UTF8, 0, s, -1, NULL, 0);
	wchar_t *w = n > 0 ? malloc(sizeof(wchar_t) * (size_t)n) : NULL;
	if (w) MultiByteToWideChar(CP_UTF8, 0, s, -1, w, n);
	return w;
}

// A variant DLL imports libggml-base.dll (mingw's name for it), which
// Windows looks for beside the exe and on PATH, not beside the DLL: load the
// one beside it first, by its full path, and the variant's import binds to
// that loaded module by name.
static void *open_lib(const char *path) {
	char base[4096];
	snprintf(base, sizeof(base), "%s", path);
	char *slash = strrchr(base, '\\'), *s2 = strrchr(base, '/');
	if (s2 > slash) slash = s2;
	if (slash) {
		snprintf(slash + 1, sizeof(base) - (size_t)(slash + 1 - base), "libggml-base.dll");
		wchar_t *wb = wide(base);
		if (wb) {
			LoadLibraryW(wb);
			free(wb);
		}
	}
	wchar_t *w = wide(path);
	if (!w) return NULL;
	HMODULE h = LoadLibraryW(w);
	free(w);
	return h;
}
static void *sym(void *h, const char *name) { return (void *)GetProcAddress((HMODULE)h, name); }
static void close_lib(void *h) { FreeLibrary((HMODULE)h); }
static const char *lib_error(void) { return "LoadLibrary failed"; }
#else
static void *open_lib(const char *path) { return dlopen(path, RTLD_NOW | RTLD_LOCAL); }
static void *sym(void *h, const char *name) { return dlsym(h, name); }
static void close_lib(void *h) { dlclose(h); }
static const char *lib_error(void) {
	const char *e = dlerror();
	return e ? e : "dlopen failed";
}
#endif

int hr_cpu_score(const char *path, char *err, size_t errlen) {
	void *h = open_lib(path);
	if (!h) {
		seterr(err, errlen, "cannot load %s: %s", path, lib_error());
		return -1;
	}
	score_t f = (score_t)sym(h, "ggml_backend_score");
	int s = f ? f() : -1;
	if (!f) seterr(err, errlen, "%s has no ggml_backend_score%s", path, "");
	close_lib(h);
	return s;
}

int hr_cpu_use(const char *path, const char *variant, char *err, size_t errlen) {
	if (cpu.used) {
		seterr(err, errlen, "the CPU backend (%s) is already in use: the variant is chosen before any model opens%s",
		       cpu.variant, "");
		return -1;
	}
	// The registry keeps its own handle; this one finds the library's
	// ggml_get_type_traits_cpu, which is no backend entry point.
	void *h = open_lib(path);
	if (!h) {
		seterr(err, errlen, "cannot load %s: %s", path, lib_error());
		return -1;
	}
	traits_t traits = (traits_t)sym(h, "ggml_get_type_traits_cpu");
	ggml_backend_reg_t reg = ggml_backend_load(path);
	if (!reg || !traits || !bind_reg(reg, traits)) {
		seterr(err, errlen, "%s is not a ggml CPU backend this Homering can use%s", path, "");
		close_lib(h);
		return -1;
	}
	// h stays open: the library is never unloaded (ggml's registry holds it too).
	snprintf(cpu.variant, sizeof(cpu.variant), "%s", variant);
	return 0;
}

const char *hr_cpu_variant(void) {
	init_static();
	return cpu.variant;
}

int hr_cpu_avx2(void) {
	init_static();
	return cpu.avx2;
}

int hr_cpu_avx512(void) {
	init_static();
	return cpu.avx512;
}

// The functions below make things from the backend: after the first, the
// choice stands (the queries above only read it).
static void use(void) {
	init_static();
	cpu.used = 1;
}

ggml_backend_t hr_cpu_init(int n_threads) {
	use();
	ggml_backend_t be = ggml_backend_dev_init(cpu.dev, NULL);
	if (be) cpu.set_n_threads(be, n_threads);
	return be;
}

struct ggml_threadpool *hr_cpu_threadpool_new(struct ggml_threadpool_params *p) {
	use();
	return cpu.tp_new(p);
}

void hr_cpu_threadpool_free(struct ggml_threadpool *tp) {
	init_static();
	cpu.tp_free(tp);
}

void hr_cpu_set_threadpool(ggml_backend_t be, struct ggml_threadpool *tp) {
	init_static();
	cpu.set_tp(be, tp);
}

ggml_backend_buffer_t hr_cpu_buffer_from_ptr(void *ptr, size_t size) {
	use();
	return ggml_backend_dev_buffer_from_host_ptr(cpu.dev, ptr, size, size);
}

ggml_backend_buffer_type_t hr_cpu_buffer_type(void) {
	use();
	return ggml_backend_dev_buffer_type(cpu.dev);
}

const struct ggml_type_traits_cpu *hr_cpu_traits(enum ggml_type type) {
	init_static();
	return cpu.traits(type);
}

const char *hr_cpu_builtin_isa(void) {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__) && defined(__AVX512VBMI__)
	return "icelake";
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && !defined(__AVX512F__) && !defined(__AVXVNNI__)
	return "haswell";
#elif defined(__x86_64__) && !defined(__SSE4_2__) && !defined(__AVX__)
	return "x64";
#else
	return "";
#endif
}
