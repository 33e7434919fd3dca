package slice

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/engine/gguf"
)

const stories = "../../../shared/models/stories260K.gguf"

// fileSource serves tensors from a local GGUF, as the head does from its file.
type fileSource struct {
	f       *os.File
	g       *gguf.File
	reads   int64
	failAt  int64 // fail once this many bytes were served (0: never)
	corrupt string
}

func (s *fileSource) ReadTensor(_ context.Context, name string, off int64, p []byte) error {
	t, ok := s.g.Tensor(name)
	if !ok || off+int64(len(p)) > t.Size {
		return fmt.Errorf("no bytes %d+%d of %s", off, len(p), name)
	}
	if s.failAt > 0 && s.reads+int64(len(p)) > s.failAt {
		return errors.New("link closed")
	}
	if _, err := s.f.ReadAt(p, t.Offset+off); err != nil {
		return err
	}
	if name == s.corrupt {
		p[0] ^= 1
	}
	s.reads += int64(len(p))
	return nil
}

func open(t *testing.T, path string) (*fileSource, Spec) {
	t.Helper()
	g, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	spec := Spec{Source: g, Hashes: map[string][32]byte{}}
	spec.Model = sha256.Sum256([]byte(path))
	for _, ti := range g.Tensors {
		b := make([]byte, ti.Size)
		if _, err := f.ReadAt(b, ti.Offset); err != nil {
			t.Fatal(err)
		}
		spec.Hashes[ti.Name] = sha256.Sum256(b)
	}
	return &fileSource{f: f, g: g}, spec
}

func TestBuildHoldsExactlyItsTensors(t *testing.T) {
	src, spec := open(t, stories)
	spec.Layers = []Range{{1, 2}, {3, 5}}
	b := &Builder{Dir: t.TempDir(), Chunk: 1000}
	var progress int64
	b.Progress = func(_ string, done, total int64) { progress = done }
	res, err := b.Build(context.Background(), spec, src)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gguf.Open(res.Path)
	if err != nil {
		t.Fatalf("the slice is not a valid GGUF: %v", err)
	}
	var names, want []string
	for _, ti := range g.Tensors {
		names = append(names, ti.Name)
		got := make([]byte, ti.Size)
		orig, _ := spec.Source.Tensor(ti.Name)
		wantBytes := make([]byte, orig.Size)
		readAt(t, res.Path, got, ti.Offset)
		readAt(t, stories, wantBytes, orig.Offset)
		if !bytes.Equal(got, wantBytes) || ti.Type != orig.Type || !cmp.Equal(ti.Shape, orig.Shape) {
			t.Errorf("tensor %s differs from the source", ti.Name)
		}
	}
	for _, ti := range spec.Source.Tensors {
		var n int
		if _, err := fmt.Sscanf(ti.Name, "blk.%d.", &n); err == nil && (n == 1 || n == 3 || n == 4) {
			want = append(want, ti.Name)
		}
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tensors (-want +got)\n%s", diff)
	}
	layers, _ := g.Ints("homering.slice.layers")
	if diff := cmp.Diff([]int64{1, 2, 3, 5}, layers); diff != "" {
		t.Errorf("homering.slice.layers (-want +got)\n%s", diff)
	}
	arch, _ := g.String("general.architecture")
	n, _ := g.Int(arch + ".block_count")
	if n != 5 {
		t.Errorf("block_count = %d, want the source's 5", n)
	}
	if progress != res.Total || res.Fetched != res.Total || res.Reused {
		t.Errorf("progress %d, result %+v", progress, res)
	}
	// Every metadata key of the source survives with its value.
	for _, kv := range spec.Source.KV {
		v, ok := g.Value(kv.Key)
		if !ok || !cmp.Equal(v.Any(), kv.Value.Any()) {
			t.Errorf("metadata %s lost or changed", kv.Key)
		}
	}
	if _, err := os.Stat(res.Path + ".part"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("part file left behind: %v", err)
	}

	// A warm restart reuses it without fetching.
	res2, err := b.Build(context.Background(), spec, &fileSource{g: spec.Source, failAt: 1})
	if err != nil || !res2.Reused || res2.Path != res.Path {
		t.Errorf("warm restart: %+v, %v", res2, err)
	}
}

func readAt(t *testing.T, path string, p []byte, off int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.ReadAt(p, off); err != nil {
		t.Fatal(err)
	}
}

func TestBuildResumes(t *testing.T) {
	src, spec := open(t, stories)
	spec.Layers = []Range{{0, 5}}
	spec.Input, spec.Output = true, true
	dir := t.TempDir()
	b := &Builder{Dir: dir, Chunk: 4096}
	src.failAt = 200_000
	if _, err := b.Build(context.Background(), spec, src); err == nil {
		t.Fatal("a broken link gave no error")
	}
	if _, err := os.Stat(filepath.Join(dir, Name(spec))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a half-built slice is in place: %v", err)
	}
	first := src.reads
	src.failAt, src.reads = 0, 0
	res, err := b.Build(context.Background(), spec, src)
	if err != nil {
		t.Fatal(err)
	}
	if res.Fetched >= res.Total || res.Fetched+first < res.Total {
		t.Errorf("resume fetched %d of %d after %d before; want only the rest", res.Fetched, res.Total, first)
	}
	if _, err := gguf.Open(res.Path); err != nil {
		t.Error(err)
	}
}

func TestBuildRefusesBadData(t *testing.T) {
	src, spec := open(t, stories)
	spec.Layers = []Range{{2, 3}}
	src.corrupt = "blk.2.ffn_up.weight"
	dir := t.TempDir()
	_, err := (&Builder{Dir: dir}).Build(context.Background(), spec, src)
	if !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("err = %v, want ErrHashMismatch", err)
	}
	if _, err := os.Stat(filepath.Join(dir, Name(spec))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a slice with bad data is in place: %v", err)
	}
}

func TestBuildFullDisk(t *testing.T) {
	src, spec := open(t, stories)
	spec.Layers = []Range{{0, 1}}
	dir := t.TempDir()
	b := &Builder{Dir: dir, allocate: func(*os.File, int64) error { return syscall.ENOSPC }}
	_, err := b.Build(context.Background(), spec, src)
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("err = %v, want ErrNoSpace", err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 0 || src.reads != 0 {
		t.Errorf("after a full disk: %d files left, %d bytes fetched; want none", len(left), src.reads)
	}
}

func TestSpecChecks(t *testing.T) {
	_, spec := open(t, stories)
	tests := []struct {
		name   string
		layers []Range
	}{
		{"past the model", []Range{{4, 6}}},
		{"overlapping", []Range{{0, 2}, {1, 3}}},
		{"empty range", []Range{{2, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec
			s.Layers = tt.layers
			if _, err := (&Builder{Dir: t.TempDir()}).Build(context.Background(), s, nil); !errors.Is(err, ErrSpec) {
				t.Errorf("err = %v, want ErrSpec", err)
			}
		})
	}
}

func TestPackageDoc(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil || len(strings.Fields(f.Doc.Text())) < 30 {
		t.Error("doc.go: the package comment is missing or too short to be a spec")
	}
}
