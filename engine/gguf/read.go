package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
)

// File is a parsed GGUF header: metadata and tensor table. It holds no
// tensor data; Offset and Size locate each tensor's bytes in the file.
type File struct {
	Path       string // as given to Open; empty for Read
	Size       int64  // file size in bytes
	Version    uint32 // 2 or 3
	KV         []KeyValue
	Tensors    []TensorInfo
	Alignment  int64 // general.alignment, default 32
	DataOffset int64 // absolute offset of the data section

	kvIndex     map[string]int
	tensorIndex map[string]int
}

// TensorInfo is one entry of the tensor table.
type TensorInfo struct {
	Name   string
	Type   Type
	Shape  []int64 // ggml order: Shape[0] is the row length (ne0)
	Offset int64   // absolute byte offset of the tensor's data in the file
	Size   int64   // bytes of data
}

// Elements is the number of values in the tensor.
func (t TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Limits of the format that a valid file never comes near; they keep a
// damaged header from making the parser allocate without bound.
const (
	maxDims     = 4  // GGML_MAX_DIMS
	maxNameLen  = 63 // GGML_MAX_NAME - 1 (the C side keeps a NUL)
	minKVBytes  = 8 + 4 + 1
	minTIBytes  = 8 + 4 + 4 + 8
	defaultAlig = 32
	// A metadata array or string that claims more than the whole file (plus
	// a margin) is corruption, not a cut download.
	corruptionMargin = 1 << 20
	// Hard caps, far above any real model (the largest vocabularies have
	// ~260k tokens, BPE merge lists ~500k, MoE models ~10k tensors, the
	// longest strings are embedded tokenizer JSON of a few MB). Without them
	// a damaged count in a 40 GB file could ask for tens of GB of memory.
	maxArrayLen  = 1 << 24
	maxStringLen = 1 << 26
	maxKV        = 1 << 20
	maxTensors   = 1 << 20
)

// Open reads the GGUF header of the file at path and checks the whole tensor
// table against the file's size. Every failure is a *FormatError.
func Open(path string) (*File, error) {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &FormatError{Path: path, Kind: ErrNotFound, Offset: -1, Err: err}
		}
		return nil, &FormatError{Path: path, Kind: ErrIO, Offset: -1, Detail: ioDetail(err), Err: err}
	}
	if st.IsDir() {
		return nil, &FormatError{Path: path, Kind: ErrNotRegular, Offset: -1, Detail: "is a directory"}
	}
	if !st.Mode().IsRegular() {
		return nil, &FormatError{Path: path, Kind: ErrNotRegular, Offset: -1, Detail: "is a device, pipe or socket"}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &FormatError{Path: path, Kind: ErrIO, Offset: -1, Detail: ioDetail(err), Err: err}
	}
	defer f.Close()
	g, err := Read(f, st.Size())
	if err != nil {
		var fe *FormatError
		if errors.As(err, &fe) {
			fe.Path = path
		}
		return nil, err
	}
	g.Path = path
	return g, nil
}

// ioDetail is the cause of an I/O error without the path (the message
// names the file already): "permission denied".
func ioDetail(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Read parses the GGUF header from r, which holds size bytes.
func Read(r io.ReaderAt, size int64) (*File, error) {
	if size < 0 {
		return nil, &FormatError{Kind: ErrIO, Offset: -1, Detail: fmt.Sprintf("its size %d is negative", size)}
	}
	p := &parser{
		br:   bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 1<<16),
		size: size,
	}
	f, err := p.parse()
	if err != nil {
		return nil, err
	}
	return f, nil
}

type parser struct {
	br   *bufio.Reader
	off  int64
	size int64
	what string // what is being read, for truncation messages
	buf  [8]byte
}

func (p *parser) truncated(need int64) error {
	return &FormatError{Kind: ErrTruncated, Offset: p.off, Detail: p.what, Size: p.size, Need: need}
}

func (p *parser) bad(kind error, format string, a ...any) error {
	return &FormatError{Kind: kind, Offset: p.off, Detail: fmt.Sprintf(format, a...)}
}

// read fills b from the file or reports truncation.
func (p *parser) read(b []byte) error {
	if p.off+int64(len(b)) > p.size {
		return p.truncated(p.off + int64(len(b)))
	}
	n, err := io.ReadFull(p.br, b)
	p.off += int64(n)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return p.truncated(p.off - int64(n) + int64(len(b)))
		}
		return &FormatError{Kind: ErrIO, Offset: p.off, Detail: fmt.Sprintf("at byte %d: %s", p.off, ioDetail(err)), Err: err}
	}
	return nil
}

func (p *parser) u8() (uint8, error) {
	err := p.read(p.buf[:1])
	return p.buf[0], err
}

func (p *parser) u16() (uint16, error) {
	err := p.read(p.buf[:2])
	return binary.LittleEndian.Uint16(p.buf[:2]), err
}

func (p *parser) u32() (uint32, error) {
	err := p.read(p.buf[:4])
	return binary.LittleEndian.Uint32(p.buf[:4]), err
}

func (p *parser) u64() (uint64, error) {
	err := p.read(p.buf[:8])
	return binary.LittleEndian.Uint64(p.buf[:8]), err
}

// fits checks that n items of at least elem bytes each can still be in the
// file; a claim beyond the file (plus a margin) is corruption.
func (p *parser) fits(n uint64, elem int64, kind error, what string) error {
	remaining := p.size - p.off
	if elem > 0 && n > uint64(math.MaxInt64/elem) {
		return p.bad(kind, "%s claims %d entries, more than any file can hold", what, n)
	}
	need := int64(n) * elem
	if need <= remaining {
		return nil
	}
	if need > p.size+corruptionMargin {
		return p.bad(kind, "%s claims %d entries (at least %s), more than the whole file holds", what, n, humanBytes(need))
	}
	return p.truncated(p.off + need)
}

// limit rejects a count above a hard cap before anything is allocated.
func (p *parser) limit(n, max uint64, kind error, what string) error {
	if n > max {
		return p.bad(kind, "%s claims %d entries; no model has more than %d", what, n, max)
	}
	return nil
}

// str reads a string of at most maxLen bytes.
func (p *parser) str(kind error, what string, maxLen uint64) (string, error) {
	at := p.off
	n, err := p.u64()
	if err != nil {
		return "", err
	}
	if n > maxLen {
		p.off = at
		return "", p.bad(kind, "%s is %d bytes long; the limit is %d", what, n, maxLen)
	}
	if err := p.fits(n, 1, kind, what); err != nil {
		return "", err
	}
	b := make([]byte, n)
	if err := p.read(b); err != nil {
		return "", err
	}
	return string(b), nil
}

func (p *parser) parse() (*File, error) {
	f := &File{Size: p.size, Alignment: defaultAlig}
	p.what = "its header"
	if p.size == 0 {
		return nil, &FormatError{Kind: ErrNotGGUF, Offset: 0, Detail: "it is empty (0 bytes)"}
	}
	var magic [4]byte
	if p.size < 4 {
		return nil, &FormatError{Kind: ErrNotGGUF, Offset: 0, Detail: fmt.Sprintf("it is only %d bytes long", p.size)}
	}
	if err := p.read(magic[:]); err != nil {
		return nil, err
	}
	if string(magic[:]) != "GGUF" {
		return nil, &FormatError{Kind: ErrNotGGUF, Offset: 0, Detail: fmt.Sprintf("it starts with %s instead of \"GGUF\"", strconv.Quote(string(magic[:])))}
	}
	v, err := p.u32()
	if err != nil {
		return nil, err
	}
	switch {
	case v == 2 || v == 3:
	case v&0xFFFF == 0 && (v>>24 == 2 || v>>24 == 3):
		return nil, p.bad(ErrBadVersion, "is a big-endian GGUF file, which this little-endian machine cannot use")
	case v == 1:
		return nil, p.bad(ErrBadVersion, "is GGUF version 1, which llama.cpp dropped in 2023")
	default:
		return nil, p.bad(ErrBadVersion, "is GGUF version %d; Homering reads versions 2 and 3", v)
	}
	f.Version = v
	nTensors, err := p.u64()
	if err != nil {
		return nil, err
	}
	nKV, err := p.u64()
	if err != nil {
		return nil, err
	}
	p.what = "its metadata"
	if err := p.limit(nKV, maxKV, ErrBadMetadata, "the metadata count"); err != nil {
		return nil, err
	}
	if err := p.fits(nKV, minKVBytes, ErrBadMetadata, "the metadata count"); err != nil {
		return nil, err
	}
	f.KV = make([]KeyValue, 0, nKV)
	f.kvIndex = make(map[string]int, nKV)
	for i := uint64(0); i < nKV; i++ {
		at := p.off
		key, err := p.str(ErrBadMetadata, fmt.Sprintf("key %d's name", i), maxStringLen)
		if err != nil {
			return nil, err
		}
		if _, dup := f.kvIndex[key]; dup {
			p.off = at
			return nil, p.bad(ErrBadMetadata, "key %q appears twice", key)
		}
		val, err := p.value(key)
		if err != nil {
			return nil, err
		}
		f.kvIndex[key] = len(f.KV)
		f.KV = append(f.KV, KeyValue{Key: key, Value: val})
	}
	if i, ok := f.kvIndex["general.alignment"]; ok {
		a, isU32 := f.KV[i].Value.v.(uint32)
		if !isU32 {
			return nil, p.bad(ErrBadMetadata, "general.alignment is a %s, not the uint32 llama.cpp requires", f.KV[i].Value.Type)
		}
		if a == 0 || a&(a-1) != 0 {
			return nil, p.bad(ErrBadMetadata, "general.alignment is %d, not a power of two", a)
		}
		f.Alignment = int64(a)
	}

	p.what = "its tensor table"
	if err := p.limit(nTensors, maxTensors, ErrBadTensor, "the tensor count"); err != nil {
		return nil, err
	}
	if err := p.fits(nTensors, minTIBytes, ErrBadTensor, "the tensor count"); err != nil {
		return nil, err
	}
	f.Tensors = make([]TensorInfo, 0, nTensors)
	f.tensorIndex = make(map[string]int, nTensors)
	relOffsets := make([]uint64, 0, nTensors)
	for i := uint64(0); i < nTensors; i++ {
		t, rel, err := p.tensorInfo(i, f.tensorIndex)
		if err != nil {
			return nil, err
		}
		f.tensorIndex[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
		relOffsets = append(relOffsets, rel)
	}
	f.DataOffset = pad(p.off, f.Alignment)
	return f, p.placeTensors(f, relOffsets)
}

// value reads one metadata value (type tag included).
func (p *parser) value(key string) (Value, error) {
	t, err := p.u32()
	if err != nil {
		return Value{}, err
	}
	vt := ValueType(t)
	if vt == Array {
		et, err := p.u32()
		if err != nil {
			return Value{}, err
		}
		n, err := p.u64()
		if err != nil {
			return Value{}, err
		}
		elem := ValueType(et)
		if elem == Array {
			return Value{}, p.bad(ErrBadMetadata, "key %q is an array of arrays, which GGUF does not allow", key)
		}
		if elem.scalarSize() == 0 {
			return Value{}, p.bad(ErrBadMetadata, "key %q is an array of unknown type %d", key, et)
		}
		if err := p.limit(n, maxArrayLen, ErrBadMetadata, fmt.Sprintf("key %q", key)); err != nil {
			return Value{}, err
		}
		if err := p.fits(n, elem.scalarSize(), ErrBadMetadata, fmt.Sprintf("key %q", key)); err != nil {
			return Value{}, err
		}
		a, err := p.array(elem, int(n), key)
		return Value{Type: Array, Elem: elem, v: a}, err
	}
	if vt.scalarSize() == 0 {
		return Value{}, p.bad(ErrBadMetadata, "key %q has unknown value type %d", key, t)
	}
	x, err := p.scalar(vt, key)
	return Value{Type: vt, v: x}, err
}

func (p *parser) scalar(t ValueType, key string) (any, error) {
	switch t {
	case Uint8:
		return p.u8()
	case Int8:
		x, err := p.u8()
		return int8(x), err
	case Bool:
		x, err := p.u8()
		return x != 0, err
	case Uint16:
		return p.u16()
	case Int16:
		x, err := p.u16()
		return int16(x), err
	case Uint32:
		return p.u32()
	case Int32:
		x, err := p.u32()
		return int32(x), err
	case Float32:
		x, err := p.u32()
		return math.Float32frombits(x), err
	case Uint64:
		return p.u64()
	case Int64:
		x, err := p.u64()
		return int64(x), err
	case Float64:
		x, err := p.u64()
		return math.Float64frombits(x), err
	case String:
		return p.str(ErrBadMetadata, fmt.Sprintf("the string of key %q", key), maxStringLen)
	}
	return nil, p.bad(ErrBadMetadata, "key %q has unknown value type %d", key, uint32(t))
}

// array reads n elements of t; fits has bounded n by the file size.
func (p *parser) array(t ValueType, n int, key string) (any, error) {
	if t == String {
		out := make([]string, n)
		for i := range out {
			s, err := p.str(ErrBadMetadata, fmt.Sprintf("element %d of key %q", i, key), maxStringLen)
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	raw := make([]byte, int64(n)*t.scalarSize())
	if err := p.read(raw); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	switch t {
	case Uint8:
		return raw, nil
	case Int8:
		out := make([]int8, n)
		for i := range out {
			out[i] = int8(raw[i])
		}
		return out, nil
	case Bool:
		out := make([]bool, n)
		for i := range out {
			out[i] = raw[i] != 0
		}
		return out, nil
	case Uint16:
		out := make([]uint16, n)
		for i := range out {
			out[i] = le.Uint16(raw[2*i:])
		}
		return out, nil
	case Int16:
		out := make([]int16, n)
		for i := range out {
			out[i] = int16(le.Uint16(raw[2*i:]))
		}
		return out, nil
	case Uint32:
		out := make([]uint32, n)
		for i := range out {
			out[i] = le.Uint32(raw[4*i:])
		}
		return out, nil
	case Int32:
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(le.Uint32(raw[4*i:]))
		}
		return out, nil
	case Float32:
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
		return out, nil
	case Uint64:
		out := make([]uint64, n)
		for i := range out {
			out[i] = le.Uint64(raw[8*i:])
		}
		return out, nil
	case Int64:
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(le.Uint64(raw[8*i:]))
		}
		return out, nil
	case Float64:
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
		return out, nil
	}
	return nil, p.bad(ErrBadMetadata, "key %q has unknown element type %d", key, uint32(t))
}

// tensorInfo reads entry i of the tensor table with gguf.cpp's checks.
func (p *parser) tensorInfo(i uint64, seen map[string]int) (TensorInfo, uint64, error) {
	at := p.off
	name, err := p.str(ErrBadTensor, fmt.Sprintf("tensor %d's name", i), maxNameLen)
	if err != nil {
		return TensorInfo{}, 0, err
	}
	if _, dup := seen[name]; dup {
		p.off = at
		return TensorInfo{}, 0, p.bad(ErrBadTensor, "tensor %q appears twice", name)
	}
	nDims, err := p.u32()
	if err != nil {
		return TensorInfo{}, 0, err
	}
	if nDims > maxDims {
		return TensorInfo{}, 0, p.bad(ErrBadTensor, "tensor %q has %d dimensions; ggml allows at most %d", name, nDims, maxDims)
	}
	shape := make([]int64, nDims)
	elems := int64(1)
	for d := range shape {
		n, err := p.u64()
		if err != nil {
			return TensorInfo{}, 0, err
		}
		if n > math.MaxInt64 {
			return TensorInfo{}, 0, p.bad(ErrBadTensor, "tensor %q has a negative dimension %d", name, int64(n))
		}
		shape[d] = int64(n)
		if n != 0 && elems > math.MaxInt64/int64(n) {
			return TensorInfo{}, 0, p.bad(ErrBadTensor, "tensor %q has more elements than a 64-bit count can hold", name)
		}
		elems *= int64(n)
	}
	tt, err := p.u32()
	if err != nil {
		return TensorInfo{}, 0, err
	}
	t := Type(tt)
	if !t.Valid() {
		return TensorInfo{}, 0, p.bad(ErrBadTensor, "tensor %q has unknown type number %d", name, tt)
	}
	rowLen := int64(1)
	if nDims > 0 {
		rowLen = shape[0]
	}
	if rowLen%t.BlockSize() != 0 {
		return TensorInfo{}, 0, p.bad(ErrBadTensor, "tensor %q has rows of %d values, not a multiple of %s's block of %d", name, rowLen, t, t.BlockSize())
	}
	rel, err := p.u64()
	if err != nil {
		return TensorInfo{}, 0, err
	}
	size := elems / t.BlockSize() * t.TypeSize()
	if elems/t.BlockSize() > math.MaxInt64/t.TypeSize() {
		return TensorInfo{}, 0, p.bad(ErrBadTensor, "tensor %q is larger than a 64-bit size can hold", name)
	}
	return TensorInfo{Name: name, Type: t, Shape: shape, Size: size}, rel, nil
}

// placeTensors checks the data offsets as gguf.cpp does (each tensor starts
// where the previous one's aligned data ends) and that all data is inside the
// file.
func (p *parser) placeTensors(f *File, rel []uint64) error {
	var expect int64
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if rel[i]%uint64(f.Alignment) != 0 {
			return &FormatError{Kind: ErrBadTensor, Offset: -1, Detail: fmt.Sprintf("tensor %q starts at data offset %d, which is not a multiple of the alignment %d", t.Name, rel[i], f.Alignment)}
		}
		if rel[i] != uint64(expect) {
			return &FormatError{Kind: ErrBadTensor, Offset: -1, Detail: fmt.Sprintf("tensor %q starts at data offset %d where %d was expected (tensors must follow each other)", t.Name, rel[i], expect)}
		}
		if t.Size > math.MaxInt64-f.DataOffset-expect-f.Alignment {
			return &FormatError{Kind: ErrBadTensor, Offset: -1, Detail: fmt.Sprintf("tensor %q ends beyond any possible file size", t.Name)}
		}
		t.Offset = f.DataOffset + expect
		expect = pad(expect+t.Size, f.Alignment)
	}
	// Report the first tensor cut off, and how big the whole file should be.
	for _, t := range f.Tensors {
		if t.Offset+t.Size > f.Size {
			last := f.Tensors[len(f.Tensors)-1]
			return &FormatError{Kind: ErrTruncated, Offset: t.Offset, Detail: "its tensor data", Size: f.Size, Need: last.Offset + last.Size}
		}
	}
	return nil
}

func pad(n, align int64) int64 { return (n + align - 1) / align * align }
