package wire

import (
	"encoding/binary"
	"math"
)

// F16Data encodes v as F16 activation data: IEEE 754 binary16, little
// endian, each value rounded to the nearest (ties to even). A value beyond
// F16's range (|x| > 65504, infinities included) saturates to ±65504: an
// infinity would turn the next device's norm into NaNs, a clipped outlier
// only bends one value. NaN stays NaN.
func F16Data(v []float32) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], F16Bits(x))
	}
	return b
}

// F16s decodes F16 activation data (a copy, widened to float32: exact).
func F16s(b []byte) []float32 {
	v := make([]float32, len(b)/2)
	for i := range v {
		v[i] = F16Float(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return v
}

// Floats decodes an activation's data by its dtype (F32 or F16; nil for
// another).
func Floats(a *Activation) []float32 {
	switch a.DType {
	case F32:
		return F32s(a.Data)
	case F16:
		return F16s(a.Data)
	}
	return nil
}

// Data encodes v as activation data of dtype dt (F32 or F16; nil for
// another).
func Data(dt DType, v []float32) []byte {
	switch dt {
	case F32:
		return F32Data(v)
	case F16:
		return F16Data(v)
	}
	return nil
}

// f16Max is the largest finite F16, 65504.
const f16Max = 0x7bff

// F16Bits is x as F16 bits, rounded to the nearest (ties to even),
// saturating to ±65504 (see F16Data).
func F16Bits(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00 // NaN
		}
		return sign | f16Max
	}
	e := exp - 127 + 15 // F16's biased exponent
	if e >= 0x1f {
		return sign | f16Max
	}
	if e <= 0 {
		// An F16 subnormal (units of 2^-24) or zero: shift the 24-bit
		// significand down, rounding what falls off. float32 subnormals
		// (exp 0) are far below 2^-25 and become zero.
		if e < -10 || exp == 0 {
			return sign
		}
		man |= 1 << 23
		shift := uint32(14 - e)
		h := man >> shift
		rem, half := man&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || rem == half && h&1 == 1 {
			h++ // may become the smallest normal: the bits say so
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | man>>13
	if rem := man & 0x1fff; rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // a carry into the exponent is the right rounding
	}
	if h > f16Max {
		return sign | f16Max
	}
	return sign | uint16(h)
}

// F16Float is F16 bits h as a float32 (exact).
func F16Float(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp == 0:
		f := float32(man) / (1 << 24) // zero or a subnormal: man × 2^-24
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}
