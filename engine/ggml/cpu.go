package ggml

/*
#include <stdlib.h>
#include "cpu.h"
*/
import "C"

import (
	"errors"
	"sync"
	"unsafe"
)

// The CPU backend (cpu.h): every window, every model's thread pool and the
// profiler's timings run on one copy of ggml's CPU backend per process,
// either a variant library loaded with UseCPU (built by build/gpu-lib.sh
// cpu for one ISA each; engine/runner's LoadCPU picks it) or, when none is,
// the backend compiled into this binary (build/env.sh's ISA).

// BuiltinCPU is CPUVariant's answer while no variant library is in use.
const BuiltinCPU = "built-in"

var cpuMu sync.Mutex

// cpuErr is why the CPU backend that was asked for is not in use: every
// Open fails with it, so that a forced variant this CPU cannot run is a
// refusal, never a silent fallback.
var cpuErr error

// CPUScore loads the variant library at path only to ask it how well this
// CPU runs it: 0 when the CPU lacks an instruction the library was compiled
// for, more for more features (ggml's ggml_backend_score).
func CPUScore(path string) (int, error) {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	var buf [512]C.char
	s := int(C.hr_cpu_score(cp, &buf[0], C.size_t(len(buf))))
	if s < 0 {
		return 0, errors.New(C.GoString(&buf[0]))
	}
	return s, nil
}

// UseCPU makes the variant library at path (named variant, as in
// CPUVariant) this process's CPU backend. It must come before any model is
// opened: once the built-in backend is in use it refuses.
func UseCPU(path, variant string) error {
	cpuMu.Lock()
	defer cpuMu.Unlock()
	cp, cv := C.CString(path), C.CString(variant)
	defer C.free(unsafe.Pointer(cp))
	defer C.free(unsafe.Pointer(cv))
	var buf [512]C.char
	if C.hr_cpu_use(cp, cv, &buf[0], C.size_t(len(buf))) != 0 {
		return errors.New(C.GoString(&buf[0]))
	}
	return nil
}

// RefuseCPU makes every later Open fail with err: the CPU backend asked
// for (a forced variant) cannot be used, and running on another would
// measure or serve something other than what was asked.
func RefuseCPU(err error) {
	cpuMu.Lock()
	cpuErr = err
	cpuMu.Unlock()
}

func cpuRefused() error {
	cpuMu.Lock()
	defer cpuMu.Unlock()
	return cpuErr
}

// CPUVariant names the CPU backend in use: BuiltinCPU or the variant
// library's (x64, haswell, icelake, …).
func CPUVariant() string {
	cpuMu.Lock()
	defer cpuMu.Unlock()
	return C.GoString(C.hr_cpu_variant())
}

// CPUHasAVX2 says whether the CPU backend in use was compiled with AVX2,
// FMA and F16C: then the prompt kernels (gemm.c) run too, else ggml's.
func CPUHasAVX2() bool {
	cpuMu.Lock()
	defer cpuMu.Unlock()
	return C.hr_cpu_avx2() != 0
}

// BuiltinCPUISA names the variant whose ISA the built-in backend was
// compiled for (build/env.sh's -march=x86-64-v3 is haswell's; a
// HOMERING_PORTABLE build's is x64), "" when none matches: that variant
// must give the built-in backend's bits.
func BuiltinCPUISA() string { return C.GoString(C.hr_cpu_builtin_isa()) }
