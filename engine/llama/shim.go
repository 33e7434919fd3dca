package llama

/*
#cgo CPPFLAGS: -I${SRCDIR}/../ggml/include
#include <stdio.h>
#include <stdlib.h>
#include "llama.h"

// hr_log drops llama.cpp's and ggml's chatter: a vocab load alone prints ~60
// INFO lines, which would drown `homering run`'s output on stderr.
static void hr_log(enum ggml_log_level level, const char *text, void *ud) {
	(void)ud;
	if (level == GGML_LOG_LEVEL_ERROR) {
		fputs(text, stderr);
	}
}

// hr_init initialises llama.cpp (idempotent). The wrapper's BackendInit would
// also scan for GPU backend libraries and log the CPU features through slog;
// the reference runs on the CPU backend, which is compiled in.
static void hr_init(void) {
	llama_backend_init();
	llama_log_set(hr_log, NULL);
}

static const struct llama_vocab *hr_vocab(const struct llama_model *m) {
	return llama_model_get_vocab(m);
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/ollama/ollama/llama"
)

// modelHandle returns the llama_model* the wrapper keeps in llama.Model's only
// (unexported) field.
func modelHandle(m *llama.Model) (*C.struct_llama_model, error) {
	if unsafe.Sizeof(*m) != unsafe.Sizeof(uintptr(0)) {
		return nil, fmt.Errorf("llama: the ollama wrapper's Model layout changed (size %d); update engine/llama's shim", unsafe.Sizeof(*m))
	}
	return *(**C.struct_llama_model)(unsafe.Pointer(m)), nil
}

// contextHandle returns the llama_context* in llama.Context's first field.
func contextHandle(c *llama.Context) *C.struct_llama_context {
	return *(**C.struct_llama_context)(unsafe.Pointer(c))
}

func initLlama() { C.hr_init() }
