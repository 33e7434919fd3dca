package quant

/*
#cgo CFLAGS: -std=c11 -I${SRCDIR}/../include
#include "ggml.h"

// hr_quantizable lists the types ggml_quantize_chunk converts to (its
// switch at the pinned ggml; any other type would abort in it).
static int hr_quantizable(int t) {
	switch (t) {
	case GGML_TYPE_F32: case GGML_TYPE_F16: case GGML_TYPE_BF16:
	case GGML_TYPE_Q4_0: case GGML_TYPE_Q4_1: case GGML_TYPE_Q5_0: case GGML_TYPE_Q5_1:
	case GGML_TYPE_Q8_0: case GGML_TYPE_MXFP4:
	case GGML_TYPE_Q2_K: case GGML_TYPE_Q3_K: case GGML_TYPE_Q4_K: case GGML_TYPE_Q5_K: case GGML_TYPE_Q6_K:
	case GGML_TYPE_TQ1_0: case GGML_TYPE_TQ2_0:
	case GGML_TYPE_IQ2_XXS: case GGML_TYPE_IQ2_XS: case GGML_TYPE_IQ2_S: case GGML_TYPE_IQ3_XXS: case GGML_TYPE_IQ3_S:
	case GGML_TYPE_IQ1_S: case GGML_TYPE_IQ1_M: case GGML_TYPE_IQ4_NL: case GGML_TYPE_IQ4_XS:
		return 1;
	}
	return 0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	// ggml core, compiled by cgo from the pinned ollama module (the same
	// package engine/ggml links): ggml_quantize_chunk is its symbol.
	_ "github.com/ollama/ollama/ml/backend/ggml/ggml/src"
)

// ErrQuantize is wrapped by every error of Quantize: a request ggml's
// quantizer would abort on.
var ErrQuantize = errors.New("quant: cannot quantize")

// NeedsImatrix reports whether ggml's quantizer for type t refuses
// to run without an importance matrix (ggml_quantize_requires_imatrix:
// IQ2_XXS, IQ2_XS and IQ1_S at the pinned ggml).
func NeedsImatrix(t int) bool {
	return t >= 0 && t < int(C.GGML_TYPE_COUNT) && bool(C.ggml_quantize_requires_imatrix(C.enum_ggml_type(t)))
}

// Quantize converts src, rows of rowLen F32 values, to ggml type t with
// ggml's own quantizer (ggml_quantize_chunk, as llama.cpp's quantize tool
// calls it), so the bytes are the ones llama-quantize would write for the
// same values and importance matrix. imatrix, when not nil, holds rowLen
// importances (llama.cpp's imatrix: the mean squared activation of each
// input column); the types NeedsImatrix names require one.
func Quantize(t int, src []float32, rowLen int, imatrix []float32) ([]byte, error) {
	if t < 0 || t >= int(C.GGML_TYPE_COUNT) || C.hr_quantizable(C.int(t)) == 0 {
		return nil, fmt.Errorf("%w to ggml type %d", ErrQuantize, t)
	}
	blck := int64(C.ggml_blck_size(C.enum_ggml_type(t)))
	switch {
	case rowLen <= 0 || len(src)%rowLen != 0 || int64(rowLen)%blck != 0:
		return nil, fmt.Errorf("%w %d values in rows of %d to %s (blocks of %d)", ErrQuantize, len(src), rowLen, typeName(t), blck)
	case imatrix != nil && len(imatrix) != rowLen:
		return nil, fmt.Errorf("%w: an importance matrix of %d values for rows of %d", ErrQuantize, len(imatrix), rowLen)
	case imatrix == nil && NeedsImatrix(t):
		return nil, fmt.Errorf("%w to %s without an importance matrix", ErrQuantize, typeName(t))
	}
	rows := len(src) / rowLen
	out := make([]byte, int(C.ggml_row_size(C.enum_ggml_type(t), C.int64_t(rowLen)))*rows)
	if rows == 0 {
		return out, nil
	}
	var im *C.float
	if imatrix != nil {
		im = (*C.float)(unsafe.Pointer(&imatrix[0]))
	}
	n := C.ggml_quantize_chunk(C.enum_ggml_type(t), (*C.float)(unsafe.Pointer(&src[0])), unsafe.Pointer(&out[0]),
		0, C.int64_t(rows), C.int64_t(rowLen), im)
	if int(n) != len(out) {
		return nil, fmt.Errorf("%w: ggml wrote %d bytes for %d rows of %s, want %d", ErrQuantize, n, rows, typeName(t), len(out))
	}
	return out, nil
}

func typeName(t int) string { return C.GoString(C.ggml_type_name(C.enum_ggml_type(t))) }
