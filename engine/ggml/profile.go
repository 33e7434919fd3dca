package ggml

/*
#include <stdlib.h>
#include "profile.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"time"
	"unsafe"
)

// This file holds the measurement kernels engine/profile uses (profile.c):
// ggml's own matmul kernels at a layer's shapes, a memory read loop and the
// backend registry's GPUs. engine/profile owns it.

// MatmulTiming is the time of one decode-step matrix-vector product.
type MatmulTiming struct {
	// Hot is the time with the weights in cache: the kernel's compute rate
	// without per-op overhead.
	Hot time.Duration
	// Cold is the time with the weights streamed from RAM, per-op overhead
	// included: what a layer's product costs in a real decode step. Zero
	// when it was not asked for.
	Cold time.Duration
}

// ErrProfileType is returned for a weight type the profiler cannot measure.
var ErrProfileType = errors.New("ggml: the profiler cannot measure this weight type")

// CanProfileType reports whether TimeMatmul supports ggml type t.
func CanProfileType(t int) bool { return C.hr_prof_type_ok(C.int(t)) != 0 }

// TypeName is ggml's name of type t ("q4_K", "f16").
func TypeName(t int) string { return typeName(t) }

// TimeMatmul times ggml_mul_mat of a [k, rows] weight of ggml type t by one
// F32 column on the CPU backend with the given threads, for about minTime in
// total (medians of repeated runs). cold also times the product with the
// weights streamed from RAM, which allocates about 128 MiB for the call.
func TimeMatmul(t, k, rows, threads int, minTime time.Duration, cold bool) (MatmulTiming, error) {
	if threads < 1 {
		return MatmulTiming{}, fmt.Errorf("ggml: matmul with %d threads", threads)
	}
	return timeMatmul(-1, t, k, rows, threads, minTime, cold)
}

// timeMatmul checks the shape and times it on the CPU (gpu < 0) or the
// gpu-th GPU.
func timeMatmul(gpu, t, k, rows, threads int, minTime time.Duration, cold bool) (MatmulTiming, error) {
	if !CanProfileType(t) {
		return MatmulTiming{}, fmt.Errorf("%w: type %d", ErrProfileType, t)
	}
	if k <= 0 || rows <= 0 {
		return MatmulTiming{}, fmt.Errorf("ggml: matmul shape %dx%d is not positive", k, rows)
	}
	blck, _, _, _ := typeInfo(t)
	if blck <= 0 || int64(k)%blck != 0 {
		return MatmulTiming{}, fmt.Errorf("ggml: a row of %d %s weights is not a whole number of blocks", k, typeName(t))
	}
	if gpu >= GPUCount() {
		return MatmulTiming{}, fmt.Errorf("%w (GPU %d)", ErrNoGPU, gpu)
	}
	var hot, cd C.double
	var cdp *C.double
	if cold {
		cdp = &cd
	}
	var errb [256]C.char
	// ggml's threads are its own; pin this goroutine so the timing loop is
	// not moved between OS threads mid-run.
	runtime.LockOSThread()
	var rc C.int
	if gpu < 0 {
		rc = C.hr_prof_matmul(C.int(t), C.int64_t(k), C.int64_t(rows), C.int(threads), C.double(minTime.Seconds()),
			&hot, cdp, &errb[0], C.int(len(errb)))
	} else {
		rc = C.hr_prof_matmul_gpu(C.int(gpu), C.int(t), C.int64_t(k), C.int64_t(rows), C.double(minTime.Seconds()),
			&hot, cdp, &errb[0], C.int(len(errb)))
	}
	runtime.UnlockOSThread()
	if rc != 0 {
		return MatmulTiming{}, fmt.Errorf("ggml: time matmul: %s", C.GoString(&errb[0]))
	}
	return MatmulTiming{Hot: secs(float64(hot)), Cold: secs(float64(cd))}, nil
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// SumBytes reads every 8-byte word of b (its length rounded down to 64) and
// returns a checksum, so a caller can time a pure memory read.
func SumBytes(b []byte) uint64 {
	n := len(b) &^ 63
	if n == 0 {
		return 0
	}
	return uint64(C.hr_prof_read(unsafe.Pointer(&b[0]), C.size_t(n)))
}

// GPUDevice is one GPU in ggml's backend registry.
type GPUDevice struct {
	Name        string // backend device name, e.g. CUDA0, Metal
	Description string
	Integrated  bool   // shares memory with the CPU
	FreeBytes   uint64 // free memory now (Metal: the recommended working set)
	TotalBytes  uint64
}

// GPUDevices lists the GPUs ggml can use in this process.
func GPUDevices() []GPUDevice {
	var buf [16]C.hr_prof_gpu
	n := int(C.hr_prof_gpus(&buf[0], C.int(len(buf))))
	n = min(n, len(buf))
	out := make([]GPUDevice, 0, n)
	for i := range n {
		g := buf[i]
		out = append(out, GPUDevice{
			Name:        C.GoString(&g.name[0]),
			Description: C.GoString(&g.description[0]),
			Integrated:  g._type == 2,
			FreeBytes:   uint64(g.free),
			TotalBytes:  uint64(g.total),
		})
	}
	return out
}

// TimeMatmulGPU is TimeMatmul on the gpu-th GPU of GPUDevices: Hot with the
// weights in the GPU's cache, Cold (when asked) streamed from its memory.
func TimeMatmulGPU(gpu, t, k, rows int, minTime time.Duration, cold bool) (MatmulTiming, error) {
	if gpu < 0 {
		return MatmulTiming{}, fmt.Errorf("%w (GPU %d)", ErrNoGPU, gpu)
	}
	return timeMatmul(gpu, t, k, rows, 1, minTime, cold)
}

// TimeGPUCopy is the median time to copy floats F32 values into and out of
// the gpu-th GPU's memory.
func TimeGPUCopy(gpu, floats int) (toGPU, fromGPU time.Duration, err error) {
	if gpu < 0 || gpu >= GPUCount() {
		return 0, 0, fmt.Errorf("%w (GPU %d)", ErrNoGPU, gpu)
	}
	var up, down C.double
	var errb [256]C.char
	if C.hr_prof_gpu_copy(C.int(gpu), C.int64_t(floats), 64, &up, &down, &errb[0], C.int(len(errb))) != 0 {
		return 0, 0, fmt.Errorf("ggml: time GPU copy: %s", C.GoString(&errb[0]))
	}
	return secs(float64(up)), secs(float64(down)), nil
}
