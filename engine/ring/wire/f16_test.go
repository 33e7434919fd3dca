package wire

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// Every finite F16 widens to a float32 that narrows back to the same bits,
// and the known values are IEEE 754's.
func TestF16Exhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		if h&0x7c00 == 0x7c00 {
			continue // infinities saturate, NaNs stay NaN (below)
		}
		if got := F16Bits(F16Float(h)); got != h {
			t.Fatalf("%#04x → %v → %#04x", h, F16Float(h), got)
		}
	}
	for _, tt := range []struct {
		x    float32
		want uint16
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0x8000}, {1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800},
		{65504, 0x7bff}, {65519, 0x7bff}, {65520, 0x7bff}, {1e9, 0x7bff}, {-1e9, 0xfbff},
		{float32(math.Inf(1)), 0x7bff}, {float32(math.Inf(-1)), 0xfbff},
		{1.0 / (1 << 24), 0x0001}, {1.0 / (1 << 25), 0}, {1.5 / (1 << 25), 0x0001}, {1.0 / (1 << 14), 0x0400},
		{1 + 1.0/(1<<11), 0x3c00}, {1 + 3.0/(1<<11), 0x3c02}, {1 + 1.0/(1<<10), 0x3c01},
		{float32(math.SmallestNonzeroFloat32), 0}, {1e-8, 0},
	} {
		if got := F16Bits(tt.x); got != tt.want {
			t.Errorf("F16Bits(%g) = %#04x, want %#04x", tt.x, got, tt.want)
		}
	}
	if v := F16Float(F16Bits(float32(math.NaN()))); !math.IsNaN(float64(v)) {
		t.Errorf("NaN became %v", v)
	}
}

// nearest checks that F16Bits(x) is the F16 nearest x (ties to even) for a
// finite x in F16's range.
func nearest(t *testing.T, x float32) {
	t.Helper()
	if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) || math.Abs(float64(x)) > 65504 {
		return
	}
	h := F16Bits(x)
	d := math.Abs(float64(F16Float(h)) - float64(x))
	for _, n := range []uint16{h + 1, h - 1} {
		if n&0x7c00 == 0x7c00 || (n^h)&0x8000 != 0 {
			continue // past the largest finite, or across zero
		}
		dn := math.Abs(float64(F16Float(n)) - float64(x))
		if dn < d || dn == d && n&1 == 0 {
			t.Fatalf("F16Bits(%g) = %#04x (%g), but %#04x (%g) is nearer or the even tie", x, h, F16Float(h), n, F16Float(n))
		}
	}
}

func TestF16Nearest(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 4))
	for range 200000 {
		// Hidden-state magnitudes: 2^-30 to 2^16, either sign.
		x := float32(math.Ldexp(rng.Float64()+0.5, rng.IntN(47)-30))
		if rng.IntN(2) == 0 {
			x = -x
		}
		nearest(t, x)
	}
}

// F16 activations round-trip through Encode and Decode with half the bytes
// of F32 ones.
func TestF16Activation(t *testing.T) {
	v := []float32{0.25, -3.5, 1000, 1e-3, 70000}
	a := &Activation{Plan: 1, Seq: 2, Layers: Range{0, 4}, Rows: 1, NEmbd: 5, DType: F16, Data: Data(F16, v)}
	typ, p, err := Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(typ, p)
	if err != nil {
		t.Fatal(err)
	}
	got := Floats(m.(*Activation))
	want := []float32{0.25, -3.5, 1000, 0.0010004044, 65504}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("value %d: %v, want %v", i, got[i], want[i])
		}
	}
	f32 := Data(F32, v)
	if len(a.Data)*2 != len(f32) || !bytes.Equal(Data(F32, Floats(&Activation{DType: F32, Data: f32})), f32) {
		t.Errorf("F16 data is %d bytes, F32 %d: want half", len(a.Data), len(f32))
	}
}

func FuzzF16(f *testing.F) {
	for _, x := range []float32{0, 1, 65504, 65520, 1.0 / (1 << 24), -0.1} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float32) {
		nearest(t, x)
		h := F16Bits(x)
		if math.IsNaN(float64(x)) != math.IsNaN(float64(F16Float(h))) || h&0x7fff == 0x7c00 {
			t.Fatalf("%g → %#04x: NaN must stay NaN, and nothing becomes infinite", x, h)
		}
	})
}
