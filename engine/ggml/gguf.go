package ggml

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// A minimal, bounds-checked GGUF reader over the mapped bytes. It reads only
// what the engine needs (scalar metadata, the tensor table) and checks every
// length and offset against the file size, so that nothing malformed reaches
// C. Arrays are skipped (their length is checked, their values not kept).

const (
	ggufMagic       = 0x46554747 // "GGUF" little endian
	maxGGUFTensors  = 1 << 20
	maxGGUFKV       = 1 << 20
	maxGGUFDims     = 4
	ggufDefaultAlig = 32
)

type ggufTensor struct {
	name   string
	typ    int
	ne     [4]int64
	nDims  int
	offset int64 // absolute file offset of the data
	size   int64
}

type ggufFile struct {
	version uint32
	kv      map[string]any // scalars; arrays as ggufArray
	tensors []ggufTensor
	byName  map[string]int
	dataOff int64
}

type ggufArray struct {
	typ uint32
	n   uint64
}

type ggufReader struct {
	b   []byte
	off int64
	err error
}

var errShort = errors.New("short")

func (r *ggufReader) need(n int64) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || r.off+n > int64(len(r.b)) || r.off+n < r.off {
		r.err = errShort
		return false
	}
	return true
}

func (r *ggufReader) u8() uint8 {
	if !r.need(1) {
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func (r *ggufReader) u16() uint16 {
	if !r.need(2) {
		return 0
	}
	v := binary.LittleEndian.Uint16(r.b[r.off:])
	r.off += 2
	return v
}

func (r *ggufReader) u32() uint32 {
	if !r.need(4) {
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

func (r *ggufReader) u64() uint64 {
	if !r.need(8) {
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

func (r *ggufReader) str() string {
	n := r.u64()
	if n > uint64(len(r.b)) || !r.need(int64(n)) {
		r.err = errShort
		return ""
	}
	s := string(r.b[r.off : r.off+int64(n)])
	r.off += int64(n)
	return s
}

// scalar sizes by GGUF value type; 0 for string (8) and array (9).
var ggufScalarSize = map[uint32]int64{0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

func (r *ggufReader) value(t uint32) (any, error) {
	switch t {
	case 0:
		return r.u8(), nil
	case 1:
		return int8(r.u8()), nil
	case 2:
		return r.u16(), nil
	case 3:
		return int16(r.u16()), nil
	case 4:
		return r.u32(), nil
	case 5:
		return int32(r.u32()), nil
	case 6:
		return math.Float32frombits(r.u32()), nil
	case 7:
		return r.u8() != 0, nil
	case 8:
		return r.str(), nil
	case 10:
		return r.u64(), nil
	case 11:
		return int64(r.u64()), nil
	case 12:
		return math.Float64frombits(r.u64()), nil
	case 9:
		et := r.u32()
		n := r.u64()
		if r.err != nil {
			return nil, nil
		}
		if et == 8 {
			for i := uint64(0); i < n && r.err == nil; i++ {
				r.str()
			}
		} else if sz, ok := ggufScalarSize[et]; ok {
			if n > uint64(len(r.b)) || !r.need(int64(n)*sz) {
				r.err = errShort
				return nil, nil
			}
			r.off += int64(n) * sz
		} else {
			return nil, fmt.Errorf("array of unknown value type %d", et)
		}
		return ggufArray{et, n}, nil
	}
	return nil, fmt.Errorf("unknown metadata value type %d", t)
}

// parseGGUF reads the header, metadata and tensor table of b and checks
// every tensor's data range against len(b).
func parseGGUF(b []byte) (*ggufFile, error) {
	r := &ggufReader{b: b}
	if len(b) < 4 || binary.LittleEndian.Uint32(b) != ggufMagic {
		return nil, ErrNotGGUF
	}
	r.off = 4
	f := &ggufFile{kv: map[string]any{}, byName: map[string]int{}}
	f.version = r.u32()
	if r.err == nil && (f.version < 2 || f.version > 3) {
		return nil, fmt.Errorf("%w: version %d (this engine reads versions 2 and 3)", ErrCorrupt, f.version)
	}
	nT, nKV := r.u64(), r.u64()
	if r.err != nil {
		return nil, ErrTruncated
	}
	if nT > maxGGUFTensors || nKV > maxGGUFKV {
		return nil, fmt.Errorf("%w: header claims %d tensors and %d metadata keys", ErrCorrupt, nT, nKV)
	}
	for i := uint64(0); i < nKV; i++ {
		k := r.str()
		t := r.u32()
		v, err := r.value(t)
		if err != nil {
			return nil, fmt.Errorf("%w: metadata key %q: %v", ErrCorrupt, k, err)
		}
		if r.err != nil {
			return nil, ErrTruncated
		}
		f.kv[k] = v
	}
	align := int64(ggufDefaultAlig)
	if a, ok := f.kv["general.alignment"].(uint32); ok {
		if a == 0 || a&(a-1) != 0 {
			return nil, fmt.Errorf("%w: general.alignment %d is not a power of two", ErrCorrupt, a)
		}
		align = int64(a)
	}
	type raw struct {
		name string
		nd   uint32
		ne   [4]int64
		typ  uint32
		off  uint64
	}
	raws := make([]raw, 0, min(nT, 1<<16))
	for i := uint64(0); i < nT; i++ {
		var t raw
		t.name = r.str()
		t.nd = r.u32()
		if r.err != nil {
			return nil, ErrTruncated
		}
		if t.nd == 0 || t.nd > maxGGUFDims {
			return nil, fmt.Errorf("%w: tensor %q has %d dimensions", ErrCorrupt, t.name, t.nd)
		}
		t.ne = [4]int64{1, 1, 1, 1}
		for d := uint32(0); d < t.nd; d++ {
			v := r.u64()
			if v == 0 || v > 1<<40 {
				if r.err == nil {
					return nil, fmt.Errorf("%w: tensor %q has dimension %d of size %d", ErrCorrupt, t.name, d, v)
				}
			}
			t.ne[d] = int64(v)
		}
		t.typ = r.u32()
		t.off = r.u64()
		if r.err != nil {
			return nil, ErrTruncated
		}
		raws = append(raws, t)
	}
	f.dataOff = (r.off + align - 1) / align * align
	for _, t := range raws {
		if _, dup := f.byName[t.name]; dup {
			return nil, fmt.Errorf("%w: tensor %q appears twice", ErrCorrupt, t.name)
		}
		if len(t.name) >= 64 {
			return nil, fmt.Errorf("%w: tensor name %q is longer than 63 bytes", ErrCorrupt, t.name)
		}
		blck, tsize, _, ok := typeInfo(int(t.typ))
		if !ok {
			return nil, fmt.Errorf("%w: tensor %q has unknown type %d", ErrCorrupt, t.name, t.typ)
		}
		if t.ne[0]%blck != 0 {
			return nil, fmt.Errorf("%w: tensor %q row of %d values is not a whole number of %d-value blocks", ErrCorrupt, t.name, t.ne[0], blck)
		}
		if t.off%uint64(align) != 0 {
			return nil, fmt.Errorf("%w: tensor %q data offset %d is not aligned to %d", ErrCorrupt, t.name, t.off, align)
		}
		size := t.ne[0] / blck * int64(tsize)
		for d := 1; d < 4; d++ {
			if size > math.MaxInt64/t.ne[d] {
				return nil, fmt.Errorf("%w: tensor %q is impossibly large", ErrCorrupt, t.name)
			}
			size *= t.ne[d]
		}
		start := f.dataOff + int64(t.off)
		if t.off > uint64(len(b)) || start+size > int64(len(b)) {
			return nil, fmt.Errorf("%w: tensor %q ends at byte %d, past the end of the %d-byte file", ErrTruncated, t.name, start+size, len(b))
		}
		f.byName[t.name] = len(f.tensors)
		f.tensors = append(f.tensors, ggufTensor{name: t.name, typ: int(t.typ), ne: t.ne, nDims: int(t.nd), offset: start, size: size})
	}
	return f, nil
}

func (f *ggufFile) tensor(name string) (ggufTensor, bool) {
	i, ok := f.byName[name]
	if !ok {
		return ggufTensor{}, false
	}
	return f.tensors[i], true
}

// uint reads an unsigned or signed integer key; ok is false when absent or
// not an integer (or negative).
func (f *ggufFile) uint(key string) (uint64, bool) {
	switch v := f.kv[key].(type) {
	case uint8:
		return uint64(v), true
	case uint16:
		return uint64(v), true
	case uint32:
		return uint64(v), true
	case uint64:
		return v, true
	case int8:
		return uint64(v), v >= 0
	case int16:
		return uint64(v), v >= 0
	case int32:
		return uint64(v), v >= 0
	case int64:
		return uint64(v), v >= 0
	}
	return 0, false
}

func (f *ggufFile) float(key string) (float32, bool) {
	switch v := f.kv[key].(type) {
	case float32:
		return v, true
	case float64:
		return float32(v), true
	}
	return 0, false
}

func (f *ggufFile) string(key string) (string, bool) {
	s, ok := f.kv[key].(string)
	return s, ok
}
