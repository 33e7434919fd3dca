package ggml

import (
	"fmt"
	"math"

	"homering/engine/gguf"
)

// The engine's view of a GGUF (scalar metadata, the tensor table) made from
// engine/gguf's parse, the one GGUF parser: engine/gguf checks structure,
// lengths and offsets against the file; fromGGUF adds what ggml itself
// needs (names that fit GGML_MAX_NAME, types ggml knows, sizes ggml agrees
// with), so that nothing malformed reaches C.

const maxGGUFDims = 4 // ggml's GGML_MAX_DIMS

type ggufTensor struct {
	name   string
	typ    int
	ne     [4]int64
	nDims  int
	offset int64 // absolute file offset of the data
	size   int64
}

type ggufFile struct {
	kv      map[string]any // scalars; arrays as ggufArray
	tensors []ggufTensor
	byName  map[string]int
	dataOff int64
}

type ggufArray struct {
	n uint64
}

// fromGGUF is g as the engine reads it; size is the length of the bytes C
// will see (the mapping), which every tensor must lie within.
func fromGGUF(g *gguf.File, size int64) (*ggufFile, error) {
	f := &ggufFile{kv: make(map[string]any, len(g.KV)), byName: make(map[string]int, len(g.Tensors)), dataOff: g.DataOffset}
	for _, kv := range g.KV {
		if kv.Value.Type == gguf.Array {
			f.kv[kv.Key] = ggufArray{n: uint64(kv.Value.Len())}
			continue
		}
		f.kv[kv.Key] = kv.Value.Any()
	}
	for _, t := range g.Tensors {
		if len(t.Name) >= 64 {
			return nil, fmt.Errorf("%w: tensor name %q is longer than 63 bytes", ErrCorrupt, t.Name)
		}
		if len(t.Shape) == 0 || len(t.Shape) > maxGGUFDims {
			return nil, fmt.Errorf("%w: tensor %q has %d dimensions", ErrCorrupt, t.Name, len(t.Shape))
		}
		ne := [4]int64{1, 1, 1, 1}
		copy(ne[:], t.Shape)
		blck, tsize, _, ok := typeInfo(int(t.Type))
		if !ok {
			return nil, fmt.Errorf("%w: tensor %q has unknown type %d", ErrCorrupt, t.Name, t.Type)
		}
		if ne[0]%blck != 0 {
			return nil, fmt.Errorf("%w: tensor %q row of %d values is not a whole number of %d-value blocks", ErrCorrupt, t.Name, ne[0], blck)
		}
		n := ne[0] / blck * int64(tsize)
		for d := 1; d < 4; d++ {
			if ne[d] <= 0 || n > math.MaxInt64/ne[d] {
				return nil, fmt.Errorf("%w: tensor %q is impossibly large", ErrCorrupt, t.Name)
			}
			n *= ne[d]
		}
		if n != t.Size {
			return nil, fmt.Errorf("%w: tensor %q holds %d bytes by ggml's count, %d by the file's", ErrCorrupt, t.Name, n, t.Size)
		}
		if t.Offset < 0 || t.Offset+n > size {
			return nil, fmt.Errorf("%w: tensor %q ends at byte %d, past the end of the %d-byte file", ErrTruncated, t.Name, t.Offset+n, size)
		}
		if _, dup := f.byName[t.Name]; dup {
			return nil, fmt.Errorf("%w: tensor %q appears twice", ErrCorrupt, t.Name)
		}
		f.byName[t.Name] = len(f.tensors)
		f.tensors = append(f.tensors, ggufTensor{name: t.Name, typ: int(t.Type), ne: ne, nDims: len(t.Shape), offset: t.Offset, size: n})
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
