package ggml

/*
#include "gemm.h"
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
)

// Our matrix kernels (gemm.c) come in variants, each giving the same bits as
// the ggml CPU backend in use (cpu.go) when that backend has AVX2 kernels:
// KernelsAVX512 runs token steps (1 to 4 tokens: decode, speculation's
// verification passes) on AVX-512 F/BW/VL/VNNI code and prompts on the AVX2
// code; KernelsAVX2 runs both on AVX2 + FMA + F16C code; KernelsGGML is ggml's own kernels, the baseline, and the only
// one under a backend without AVX2 (whose kernels' bits ours do not make).
const (
	KernelsGGML   = "ggml"
	KernelsAVX2   = "avx2"
	KernelsAVX512 = "avx512"
)

// EnvKernels forces a variant of our kernels (KernelsGGML, KernelsAVX2 or
// KernelsAVX512) instead of the best this CPU runs.
const EnvKernels = "HOMERING_KERNELS"

var kernelsC = map[string]C.int{
	KernelsGGML:   C.HR_KERNELS_GGML,
	KernelsAVX2:   C.HR_KERNELS_AVX2,
	KernelsAVX512: C.HR_KERNELS_AVX512,
}

// KernelVariants lists the variants this CPU runs under the CPU backend in
// use, from the baseline to the best.
func KernelVariants() []string {
	var vs []string
	for _, v := range []string{KernelsGGML, KernelsAVX2, KernelsAVX512} {
		if C.hr_kernels_runs(kernelsC[v]) != 0 {
			vs = append(vs, v)
		}
	}
	return vs
}

// Kernels is the variant windows run on when WindowParams.Kernels is empty:
// EnvKernels' when it is set, else the best this CPU runs (by CPUID, under
// the CPU backend in use: choose that first). A forced variant this CPU
// cannot run is an error: every window refuses to open rather than measure
// or serve something other than what was asked.
func Kernels() (string, error) {
	if v := strings.TrimSpace(os.Getenv(EnvKernels)); v != "" {
		return checkKernels(strings.ToLower(v), EnvKernels+"="+v)
	}
	vs := KernelVariants()
	return vs[len(vs)-1], nil
}

func checkKernels(v, what string) (string, error) {
	c, ok := kernelsC[v]
	if !ok {
		return "", fmt.Errorf("%s names no kernel variant: use %s, %s or %s", what, KernelsGGML, KernelsAVX2, KernelsAVX512)
	}
	if C.hr_kernels_runs(c) == 0 {
		return "", fmt.Errorf("%s asks for kernels this CPU cannot run under the %s CPU backend (it runs %s)",
			what, CPUVariant(), strings.Join(KernelVariants(), ", "))
	}
	return v, nil
}

// windowKernels is the variant a window of p runs on.
func windowKernels(p WindowParams) (C.int, error) {
	if p.GGMLMatMul {
		return C.HR_KERNELS_GGML, nil
	}
	v, err := Kernels()
	if p.Kernels != "" {
		v, err = checkKernels(p.Kernels, "the window's kernels "+p.Kernels)
	}
	if err != nil {
		return 0, err
	}
	return kernelsC[v], nil
}
