package gguf

import "fmt"

// Type is a tensor's element type, numbered as ggml's enum ggml_type
// (ggml.h). Numbers 4, 5, 31-33 and 36-38 are types ggml removed; files that
// use them are rejected like any other unknown number.
type Type uint32

// The ggml types Homering names in code. Every other valid number is still
// accepted, sized and named (see Type.String).
const (
	TypeF32  Type = 0
	TypeF16  Type = 1
	TypeQ4_0 Type = 2
	TypeQ4_1 Type = 3
	TypeQ5_0 Type = 6
	TypeQ5_1 Type = 7
	TypeQ8_0 Type = 8
	TypeQ8_1 Type = 9
	TypeQ2_K Type = 10
	TypeQ3_K Type = 11
	TypeQ4_K Type = 12
	TypeQ5_K Type = 13
	TypeQ6_K Type = 14
	TypeQ8_K Type = 15
	// The i-quants (importance-matrix codebooks) and MXFP4 (gpt-oss's
	// experts): common in released 30-70B GGUFs.
	TypeIQ2_XXS Type = 16
	TypeIQ2_XS  Type = 17
	TypeIQ3_XXS Type = 18
	TypeIQ1_S   Type = 19
	TypeIQ4_NL  Type = 20
	TypeIQ3_S   Type = 21
	TypeIQ2_S   Type = 22
	TypeIQ4_XS  Type = 23
	TypeIQ1_M   Type = 29
	TypeBF16    Type = 30
	TypeMXFP4   Type = 39
	// TypeCount is GGML_TYPE_COUNT at the pinned ggml: no valid type is >= it.
	TypeCount Type = 40
)

// traits returns the name, block size (elements per block) and type size
// (bytes per block) of t, as ggml's type_traits table has them; blck 0 means
// t is not a type a GGUF file may use.
func (t Type) traits() (name string, blck, size int64) {
	switch t {
	case 0:
		return "F32", 1, 4
	case 1:
		return "F16", 1, 2
	case 2:
		return "Q4_0", 32, 18
	case 3:
		return "Q4_1", 32, 20
	case 6:
		return "Q5_0", 32, 22
	case 7:
		return "Q5_1", 32, 24
	case 8:
		return "Q8_0", 32, 34
	case 9:
		return "Q8_1", 32, 36
	case 10:
		return "Q2_K", 256, 84
	case 11:
		return "Q3_K", 256, 110
	case 12:
		return "Q4_K", 256, 144
	case 13:
		return "Q5_K", 256, 176
	case 14:
		return "Q6_K", 256, 210
	case 15:
		return "Q8_K", 256, 292
	case 16:
		return "IQ2_XXS", 256, 66
	case 17:
		return "IQ2_XS", 256, 74
	case 18:
		return "IQ3_XXS", 256, 98
	case 19:
		return "IQ1_S", 256, 50
	case 20:
		return "IQ4_NL", 32, 18
	case 21:
		return "IQ3_S", 256, 110
	case 22:
		return "IQ2_S", 256, 82
	case 23:
		return "IQ4_XS", 256, 136
	case 24:
		return "I8", 1, 1
	case 25:
		return "I16", 1, 2
	case 26:
		return "I32", 1, 4
	case 27:
		return "I64", 1, 8
	case 28:
		return "F64", 1, 8
	case 29:
		return "IQ1_M", 256, 56
	case 30:
		return "BF16", 1, 2
	case 34:
		return "TQ1_0", 256, 54
	case 35:
		return "TQ2_0", 256, 66
	case 39:
		return "MXFP4", 32, 17
	}
	return "", 0, 0
}

// Valid reports whether t is a type a GGUF file may hold.
func (t Type) Valid() bool {
	_, blck, _ := t.traits()
	return blck != 0
}

// String returns ggml's name for t ("Q4_K"), or "type(N)" for invalid numbers.
func (t Type) String() string {
	if name, _, _ := t.traits(); name != "" {
		return name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize is the number of elements one block of t holds (0 if invalid).
func (t Type) BlockSize() int64 {
	_, blck, _ := t.traits()
	return blck
}

// TypeSize is the number of bytes one block of t takes (0 if invalid).
func (t Type) TypeSize() int64 {
	_, _, size := t.traits()
	return size
}

// RowBytes is the size of n elements of t; n must be a multiple of BlockSize.
func (t Type) RowBytes(n int64) int64 {
	_, blck, size := t.traits()
	if blck == 0 {
		return 0
	}
	return n / blck * size
}
