package slice

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"homering/engine/gguf"
)

// Sentinels.
var (
	ErrNoSpace      = errors.New("slice: not enough disk space for the weight slice")
	ErrHashMismatch = errors.New("slice: tensor data does not match the head's hash")
	ErrSpec         = errors.New("slice: invalid slice request")
)

// Range is a half-open range of layers.
type Range struct{ Start, End int }

// Spec says which slice to build.
type Spec struct {
	Model  [32]byte            // identity of the source model (its header's SHA-256)
	Source *gguf.File          // the source's header: metadata and tensor table
	Hashes map[string][32]byte // SHA-256 of every tensor to fetch, from the head
	Layers []Range             // held layers; sorted, disjoint, within block_count
	Input  bool                // hold token_embd
	Output bool                // hold output_norm and output
}

// Source reads tensor bytes from the head (over the ring link) or a file.
type Source interface {
	// ReadTensor fills p with bytes [off, off+len(p)) of tensor name.
	ReadTensor(ctx context.Context, name string, off int64, p []byte) error
}

// syncEvery is how many verified tensor bytes Build writes between syncs of
// the part file and its done log: an interruption loses at most this much.
const syncEvery = 64 << 20

// Builder builds slices in a cache directory.
type Builder struct {
	Dir      string
	Chunk    int                                  // bytes per fetch; default 4 MiB
	Progress func(name string, done, total int64) // may be nil
	// allocate reserves size bytes of f; a seam for the full-disk test.
	allocate func(f *os.File, size int64) error
}

// Result says what Build did.
type Result struct {
	Path    string
	Reused  bool  // a complete slice was already there
	Fetched int64 // tensor bytes fetched by this call
	Total   int64 // tensor bytes in the slice
}

// Tensors lists the source tensors a slice of spec holds, in file order.
func Tensors(spec Spec) []gguf.TensorInfo {
	h := gguf.Holding{Slice: true, Input: spec.Input, Output: spec.Output}
	for _, r := range spec.Layers {
		h.Layers = append(h.Layers, gguf.LayerRange{Start: r.Start, End: r.End})
	}
	var out []gguf.TensorInfo
	for _, t := range spec.Source.Tensors {
		if h.HoldsTensor(t.Name) {
			out = append(out, t)
		}
	}
	return out
}

func (spec Spec) check() error {
	if spec.Source == nil {
		return fmt.Errorf("%w: no source header", ErrSpec)
	}
	arch, _ := spec.Source.String("general.architecture")
	n, _ := spec.Source.Int(arch + ".block_count")
	prev := 0
	for _, r := range spec.Layers {
		if r.Start < prev || r.End <= r.Start || int64(r.End) > n {
			return fmt.Errorf("%w: layer ranges %v are not sorted, disjoint and within %d layers", ErrSpec, spec.Layers, n)
		}
		prev = r.End
	}
	for _, t := range Tensors(spec) {
		if _, ok := spec.Hashes[t.Name]; !ok {
			return fmt.Errorf("%w: no hash for tensor %s", ErrSpec, t.Name)
		}
	}
	return nil
}

// Name is the slice's file name in the cache: the model and the layers.
func Name(spec Spec) string {
	var b strings.Builder
	for _, r := range spec.Layers {
		fmt.Fprintf(&b, "%d-%d,", r.Start, r.End)
	}
	fmt.Fprintf(&b, "in=%v,out=%v", spec.Input, spec.Output)
	h := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(spec.Model[:8]) + "-" + hex.EncodeToString(h[:8]) + ".gguf"
}

// Build returns the path of a complete, verified slice of spec in b.Dir,
// reusing one that is there, resuming one that was interrupted.
func (b *Builder) Build(ctx context.Context, spec Spec, src Source) (Result, error) {
	if err := spec.check(); err != nil {
		return Result{}, err
	}
	path := filepath.Join(b.Dir, Name(spec))
	header, layout, total := encodeHeader(spec)
	res := Result{Path: path, Total: total}
	if reusable(path, spec) {
		res.Reused = true
		return res, nil
	}
	if err := os.MkdirAll(b.Dir, 0o755); err != nil {
		return res, fmt.Errorf("slice: cache directory: %w", err)
	}
	part, doneLog := path+".part", path+".part.done"
	done := readDone(doneLog)
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return res, fmt.Errorf("slice: %w", err)
	}
	defer f.Close()
	size := int64(len(header)) + layout.dataSize
	if st, err := f.Stat(); err != nil || st.Size() != size || len(done) == 0 {
		// A fresh start: reserve everything first, so a full disk fails now.
		clear(done)
		_ = os.Remove(doneLog)
		if err := f.Truncate(0); err != nil {
			return res, fmt.Errorf("slice: %w", err)
		}
		alloc := b.allocate
		if alloc == nil {
			alloc = allocate
		}
		if err := alloc(f, size); err != nil {
			_ = f.Close()       // the allocation's error is the one to report
			_ = os.Remove(part) // best effort: the next fetch starts afresh anyway
			return res, diskError(err, size, b.Dir)
		}
		if _, err := f.WriteAt(header, 0); err != nil {
			return res, diskError(err, size, b.Dir)
		}
	}
	dl, err := os.OpenFile(doneLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return res, fmt.Errorf("slice: %w", err)
	}
	defer dl.Close()
	chunk := b.Chunk
	if chunk <= 0 {
		chunk = 4 << 20
	}
	buf := make([]byte, chunk)
	var have, unsynced int64
	var pending []string // verified tensors not yet in the done log
	// commit makes the pending tensors durable, then logs them: one sync of
	// the data per syncEvery bytes, not one per tensor.
	commit := func() error {
		if len(pending) == 0 {
			return nil
		}
		if err := f.Sync(); err != nil {
			return diskError(err, size, b.Dir)
		}
		if _, err := dl.WriteString(strings.Join(pending, "\n") + "\n"); err != nil {
			return diskError(err, size, b.Dir)
		}
		if err := dl.Sync(); err != nil {
			return diskError(err, size, b.Dir)
		}
		pending, unsynced = pending[:0], 0
		return nil
	}
	for i, t := range layout.tensors {
		off := int64(len(header)) + layout.offsets[i]
		want := spec.Hashes[t.Name]
		if done[t.Name] && hashAt(f, off, t.Size, buf) == want {
			have += t.Size
			continue
		}
		h := sha256.New()
		for pos := int64(0); pos < t.Size; {
			if err := ctx.Err(); err != nil {
				_ = commit() // keep what is verified for the resume
				return res, err
			}
			n := min(int64(len(buf)), t.Size-pos)
			if err := src.ReadTensor(ctx, t.Name, pos, buf[:n]); err != nil {
				_ = commit()
				return res, fmt.Errorf("slice: fetch %s at %d: %w", t.Name, pos, err)
			}
			if _, err := f.WriteAt(buf[:n], off+pos); err != nil {
				return res, diskError(err, size, b.Dir)
			}
			h.Write(buf[:n])
			pos += n
			res.Fetched += n
			if b.Progress != nil {
				b.Progress(t.Name, have+pos, total)
			}
		}
		if [32]byte(h.Sum(nil)) != want {
			_ = commit()
			return res, fmt.Errorf("%w: %s (fetch it again)", ErrHashMismatch, t.Name)
		}
		have += t.Size
		// The data must be durable before the log says it is there.
		pending = append(pending, t.Name)
		if unsynced += t.Size; unsynced >= syncEvery {
			if err := commit(); err != nil {
				return res, err
			}
		}
	}
	if err := f.Sync(); err != nil {
		return res, diskError(err, size, b.Dir)
	}
	if err := f.Close(); err != nil {
		return res, diskError(err, size, b.Dir)
	}
	if err := os.Rename(part, path); err != nil {
		return res, fmt.Errorf("slice: %w", err)
	}
	syncDir(b.Dir)
	_ = os.Remove(doneLog)
	return res, nil
}

func hashAt(f *os.File, off, n int64, buf []byte) [32]byte {
	h := sha256.New()
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, off, n), buf); err != nil {
		return [32]byte{}
	}
	return [32]byte(h.Sum(nil))
}

func readDone(path string) map[string]bool {
	done := map[string]bool{}
	f, err := os.Open(path)
	if err != nil {
		return done
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		done[sc.Text()] = true
	}
	return done
}

// reusable: a complete slice of the same source and layers is at path.
func reusable(path string, spec Spec) bool {
	g, err := gguf.Open(path)
	if err != nil {
		return false
	}
	src, _ := g.String("homering.slice.source")
	layers, _ := g.Ints("homering.slice.layers")
	in, _ := g.Bool("homering.slice.input")
	out, _ := g.Bool("homering.slice.output")
	return src == hex.EncodeToString(spec.Model[:]) && slices.Equal(layers, flatLayers(spec.Layers)) && in == spec.Input && out == spec.Output
}

func flatLayers(rs []Range) []int64 {
	out := make([]int64, 0, 2*len(rs))
	for _, r := range rs {
		out = append(out, int64(r.Start), int64(r.End))
	}
	return out
}

func diskError(err error, size int64, dir string) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w: it needs %d MB in %s; free some space or choose another cache directory: %v", ErrNoSpace, (size+(1<<20)-1)>>20, dir, err)
	}
	return fmt.Errorf("slice: write %s: %w", dir, err)
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close() // a directory opened to sync: nothing was written through it
	}
}

type layout struct {
	tensors  []gguf.TensorInfo
	offsets  []int64 // relative to the data section
	dataSize int64
}

// encodeHeader returns the slice's header (padded to the alignment) and
// where each tensor goes.
func encodeHeader(spec Spec) ([]byte, layout, int64) {
	src := spec.Source
	var l layout
	l.tensors = Tensors(spec)
	align := src.Alignment
	var total int64
	for _, t := range l.tensors {
		l.offsets = append(l.offsets, l.dataSize)
		l.dataSize = pad(l.dataSize+t.Size, align)
		total += t.Size
	}
	le := binary.LittleEndian
	b := []byte("GGUF")
	b = le.AppendUint32(b, 3)
	b = le.AppendUint64(b, uint64(len(l.tensors)))
	var kvs []gguf.KeyValue
	for _, kv := range src.KV {
		if !strings.HasPrefix(kv.Key, "homering.slice.") {
			kvs = append(kvs, kv)
		}
	}
	b = le.AppendUint64(b, uint64(len(kvs)+5))
	for _, kv := range kvs {
		b = appendKV(b, kv.Key, kv.Value)
	}
	b = appendStr(b, "homering.slice.version")
	b = le.AppendUint32(le.AppendUint32(b, uint32(gguf.Uint32)), 1)
	b = appendStr(b, "homering.slice.source")
	b = appendStr(le.AppendUint32(b, uint32(gguf.String)), hex.EncodeToString(spec.Model[:]))
	b = appendStr(b, "homering.slice.layers")
	b = le.AppendUint32(b, uint32(gguf.Array))
	flat := flatLayers(spec.Layers)
	b = le.AppendUint64(le.AppendUint32(b, uint32(gguf.Int32)), uint64(len(flat)))
	for _, v := range flat {
		b = le.AppendUint32(b, uint32(int32(v)))
	}
	b = appendStr(b, "homering.slice.input")
	b = appendBool(le.AppendUint32(b, uint32(gguf.Bool)), spec.Input)
	b = appendStr(b, "homering.slice.output")
	b = appendBool(le.AppendUint32(b, uint32(gguf.Bool)), spec.Output)
	for i, t := range l.tensors {
		b = appendStr(b, t.Name)
		b = le.AppendUint32(b, uint32(len(t.Shape)))
		for _, d := range t.Shape {
			b = le.AppendUint64(b, uint64(d))
		}
		b = le.AppendUint32(b, uint32(t.Type))
		b = le.AppendUint64(b, uint64(l.offsets[i]))
	}
	for int64(len(b))%align != 0 {
		b = append(b, 0)
	}
	return b, l, total
}

func pad(n, align int64) int64 { return (n + align - 1) / align * align }

func appendStr(b []byte, s string) []byte {
	return append(binary.LittleEndian.AppendUint64(b, uint64(len(s))), s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendKV(b []byte, key string, v gguf.Value) []byte {
	b = appendStr(b, key)
	b = binary.LittleEndian.AppendUint32(b, uint32(v.Type))
	if v.Type == gguf.Array {
		b = binary.LittleEndian.AppendUint32(b, uint32(v.Elem))
		b = binary.LittleEndian.AppendUint64(b, uint64(v.Len()))
	}
	return appendValue(b, v.Any())
}

// appendValue writes a scalar or the elements of an array as GGUF does.
func appendValue(b []byte, x any) []byte {
	le := binary.LittleEndian
	switch x := x.(type) {
	case uint8:
		return append(b, x)
	case int8:
		return append(b, byte(x))
	case uint16:
		return le.AppendUint16(b, x)
	case int16:
		return le.AppendUint16(b, uint16(x))
	case uint32:
		return le.AppendUint32(b, x)
	case int32:
		return le.AppendUint32(b, uint32(x))
	case float32:
		return le.AppendUint32(b, math.Float32bits(x))
	case uint64:
		return le.AppendUint64(b, x)
	case int64:
		return le.AppendUint64(b, uint64(x))
	case float64:
		return le.AppendUint64(b, math.Float64bits(x))
	case bool:
		return appendBool(b, x)
	case string:
		return appendStr(b, x)
	case []uint8:
		return append(b, x...)
	}
	// Arrays of anything else: element by element.
	switch x := x.(type) {
	case []int8:
		for _, e := range x {
			b = appendValue(b, e)
		}
	case []uint16:
		for _, e := range x {
			b = appendValue(b, e)
		}
	case []int16:
		for _, e := range x {
			b = appendValue(b, e)
		}
	case []uint32:
		for _, e := range x {
			b = appendValue(b, e)
		}
	case []int32:
		for _, e := range x {
			b = appendValue(b, e)
		}
	case []float32:
		for _, e := range x {
			b = appendValue(b, e)
		}
	case []uint64:
		for _, e := range x {
			b = appendValue(b, e)
		}
	case []int64:
		for _, e := range x {
			b = appendValue(b, e)
		}
	case []float64:
		for _, e := range x {
			b = appendValue(b, e)
		}
	case []bool:
		for _, e := range x {
			b = appendValue(b, e)
		}
	case []string:
		for _, e := range x {
			b = appendValue(b, e)
		}
	}
	return b
}
