package quant

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// The ggml type numbers and block sizes (elements, bytes) of ggml.h and
// ggml.c's type_traits at the pinned version.
var blocks = []struct {
	name        string
	typ         int
	elems, size int
}{
	{"F32", 0, 1, 4}, {"F16", 1, 1, 2}, {"BF16", 30, 1, 2}, {"Q8_0", 8, 32, 34}, {"Q5_0", 6, 32, 22}, {"Q4_0", 2, 32, 18},
	{"Q6_K", 14, 256, 210}, {"Q5_K", 13, 256, 176}, {"Q4_K", 12, 256, 144}, {"Q3_K", 11, 256, 110}, {"Q2_K", 10, 256, 84},
	{"IQ4_XS", 23, 256, 136}, {"IQ4_NL", 20, 32, 18}, {"IQ3_XXS", 18, 256, 98}, {"IQ3_S", 21, 256, 110},
	{"IQ2_XXS", 16, 256, 66}, {"IQ2_XS", 17, 256, 74}, {"IQ1_S", 19, 256, 50}, {"MXFP4", 39, 32, 17},
}

func TestQuantizeSizes(t *testing.T) {
	const rowLen, rows = 512, 3
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]float32, rowLen*rows)
	for i := range src {
		src[i] = float32(rng.NormFloat64())
	}
	im := make([]float32, rowLen)
	for i := range im {
		im[i] = 1 + float32(i%7)
	}
	for _, b := range blocks {
		t.Run(b.name, func(t *testing.T) {
			var imatrix []float32
			if NeedsImatrix(b.typ) {
				imatrix = im
			}
			out, err := Quantize(b.typ, src, rowLen, imatrix)
			if err != nil {
				t.Fatal(err)
			}
			if want := rows * rowLen / b.elems * b.size; len(out) != want {
				t.Errorf("%d bytes, want %d", len(out), want)
			}
		})
	}
}

func TestNeedsImatrix(t *testing.T) {
	for _, b := range blocks {
		want := b.name == "IQ2_XXS" || b.name == "IQ2_XS" || b.name == "IQ1_S"
		if got := NeedsImatrix(b.typ); got != want {
			t.Errorf("NeedsImatrix(%s) = %v, want %v", b.name, got, want)
		}
	}
}

// TestQuantizeQ8_0 checks bytes by hand: 0..31 has scale 31/127 (F16
// 0x33d0) and quants round(x/d), the last 127.
func TestQuantizeQ8_0(t *testing.T) {
	src := make([]float32, 32)
	for i := range src {
		src[i] = float32(i)
	}
	out, err := Quantize(8, src, 32, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := uint16(out[0]) | uint16(out[1])<<8; d != 0x33d0 {
		t.Errorf("scale %#04x, want 0x33d0", d)
	}
	if q := []int8{int8(out[2]), int8(out[3]), int8(out[2+16]), int8(out[2+31])}; q[0] != 0 || q[1] != 4 || q[2] != 66 || q[3] != 127 {
		t.Errorf("quants %v, want [0 4 66 127]", q)
	}
}

func TestQuantizeRefuses(t *testing.T) {
	src := make([]float32, 256)
	tests := []struct {
		name    string
		typ     int
		rowLen  int
		imatrix []float32
	}{
		{"no quantizer (Q8_K)", 15, 256, nil},
		{"not a type", 99, 256, nil},
		{"removed type", 4, 256, nil},
		{"rows not whole blocks", 12, 128, nil},
		{"values not whole rows", 8, 96, nil},
		{"IQ1_S without imatrix", 19, 256, nil},
		{"imatrix of the wrong length", 16, 256, make([]float32, 128)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Quantize(tt.typ, src, tt.rowLen, tt.imatrix); !errors.Is(err, ErrQuantize) {
				t.Errorf("err = %v, want ErrQuantize", err)
			}
		})
	}
}
