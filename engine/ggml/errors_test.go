package ggml

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOpenBadFiles: a file cut anywhere, or with a wrong header, is a typed
// error from Go, never a crash in C.
func TestOpenBadFiles(t *testing.T) {
	good, err := os.ReadFile(stories)
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{0, 3, 4, 8, 16, 23, 24, 40, 100, 1000, 5000, 20000, 100000, 500000, len(good) / 2, len(good) - 1000, len(good) - 1} {
		t.Run("cut"+strconv.Itoa(cut), func(t *testing.T) {
			_, err := Open(writeTemp(t, "cut.gguf", good[:cut]))
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrNotGGUF) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open(file cut at %d) = %v, want ErrTruncated, ErrNotGGUF or ErrCorrupt", cut, err)
			}
		})
	}
	le := binary.LittleEndian
	tests := []struct {
		name  string
		patch func(b []byte)
		want  error
	}{
		{"bad magic", func(b []byte) { copy(b, "GGUX") }, ErrNotGGUF},
		{"version 1", func(b []byte) { le.PutUint32(b[4:], 1) }, ErrCorrupt},
		{"version 99", func(b []byte) { le.PutUint32(b[4:], 99) }, ErrCorrupt},
		{"huge tensor count", func(b []byte) { le.PutUint64(b[8:], 1<<40) }, ErrCorrupt},
		{"huge kv count", func(b []byte) { le.PutUint64(b[16:], 1<<40) }, ErrCorrupt},
		{"more tensors than written", func(b []byte) { le.PutUint64(b[8:], le.Uint64(b[8:])+1) }, nil},
		{"unsupported architecture", func(b []byte) { replaceValue(t, b, "general.architecture", "llama", "gemma") }, ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Clone(good)
			tc.patch(b)
			_, err := Open(writeTemp(t, "bad.gguf", b))
			if err == nil {
				t.Fatal("Open succeeded on a bad file")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Open = %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("unsupported architecture sentence", func(t *testing.T) {
		b := bytes.Clone(good)
		replaceValue(t, b, "general.architecture", "llama", "gemma")
		_, err := Open(writeTemp(t, "gemma.gguf", b))
		var ue *UnsupportedError
		if !errors.As(err, &ue) || ue.Arch != "gemma" || !strings.Contains(err.Error(), "architecture gemma is not supported yet") {
			t.Fatalf("Open = %v, want *UnsupportedError for gemma", err)
		}
	})
	t.Run("directory", func(t *testing.T) {
		if _, err := Open(t.TempDir()); !errors.Is(err, ErrNotGGUF) {
			t.Fatalf("Open(dir) = %v, want ErrNotGGUF", err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		if _, err := Open(filepath.Join(t.TempDir(), "nope.gguf")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Open(missing) = %v, want os.ErrNotExist", err)
		}
	})
}

// replaceValue rewrites the string value of key (same length) in a GGUF.
func replaceValue(t *testing.T, b []byte, key, old, repl string) {
	t.Helper()
	i := bytes.Index(b, []byte(key))
	if i < 0 || len(old) != len(repl) {
		t.Fatalf("key %q not found", key)
	}
	j := bytes.Index(b[i:], []byte(old))
	if j < 0 || j > len(key)+16 {
		t.Fatalf("value %q of %q not found", old, key)
	}
	copy(b[i+j:], repl)
}

func TestBadWindowParams(t *testing.T) {
	m := openT(t, stories)
	L := m.Info().NLayer
	tests := []struct {
		name string
		p    WindowParams
		want error
	}{
		{"negative first", WindowParams{First: -1, Last: 2, NCtx: 8}, ErrBadWindow},
		{"last before first", WindowParams{First: 3, Last: 2, NCtx: 8}, ErrBadWindow},
		{"past the model", WindowParams{First: 0, Last: L + 1, NCtx: 8}, ErrBadWindow},
		{"embed not at 0", WindowParams{First: 1, Last: 2, Embed: true, NCtx: 8}, ErrBadWindow},
		{"output not at the end", WindowParams{First: 0, Last: 2, Output: true, NCtx: 8}, ErrBadWindow},
		{"all logits without output", WindowParams{First: 0, Last: 2, AllLogits: true, NCtx: 8}, ErrBadWindow},
		{"no context", WindowParams{First: 0, Last: 2}, ErrBadWindow},
		{"empty", WindowParams{First: 2, Last: 2, NCtx: 8}, ErrBadWindow},
		{"negative threads", WindowParams{First: 0, Last: 2, NCtx: 8, Threads: -1}, ErrBadWindow},
		{"gpu layer outside", WindowParams{First: 0, Last: 2, NCtx: 8, GPULayers: []int{3}}, ErrBadWindow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := m.NewWindow(tc.p)
			if err == nil {
				_ = w.Close() // the test fails anyway
				t.Fatal("NewWindow succeeded")
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("NewWindow = %v, want %v", err, tc.want)
			}
		})
	}
	if GPUCount() == 0 {
		if _, err := m.NewWindow(WindowParams{First: 0, Last: 2, NCtx: 8, GPULayers: []int{1}}); !errors.Is(err, ErrNoGPU) {
			t.Fatalf("GPU layer on a CPU-only machine: %v, want ErrNoGPU", err)
		}
	}
}

func TestBadEvalInputs(t *testing.T) {
	m := openT(t, stories)
	info := m.Info()
	head := newWindowT(t, m, WindowParams{First: 0, Last: 2, Embed: true, NCtx: 16, Threads: 1})
	tail := newWindowT(t, m, WindowParams{First: 2, Last: info.NLayer, Output: true, NCtx: 16, Threads: 1})
	tests := []struct {
		name string
		eval func() ([]float32, error)
		want error
	}{
		{"token past vocab", func() ([]float32, error) { return head.EvalTokens([]int32{1, int32(info.NVocab)}, 0) }, ErrBadInput},
		{"negative token", func() ([]float32, error) { return head.EvalTokens([]int32{-1}, 0) }, ErrBadInput},
		{"no tokens", func() ([]float32, error) { return head.EvalTokens(nil, 0) }, ErrBadInput},
		{"batch too large", func() ([]float32, error) { return head.EvalTokens(make([]int32, MaxBatch+1), 0) }, ErrBadInput},
		{"hidden into embed window", func() ([]float32, error) { return head.EvalHidden(make([]float32, info.NEmbd), 0) }, ErrBadInput},
		{"tokens into hidden window", func() ([]float32, error) { return tail.EvalTokens([]int32{1}, 0) }, ErrBadInput},
		{"hidden of wrong length", func() ([]float32, error) { return tail.EvalHidden(make([]float32, info.NEmbd+1), 0) }, ErrBadInput},
		{"empty hidden", func() ([]float32, error) { return tail.EvalHidden(nil, 0) }, ErrBadInput},
		{"position past NCtx", func() ([]float32, error) { return head.EvalTokens([]int32{1, 2}, 15) }, ErrOutOfContext},
		{"negative position", func() ([]float32, error) { return head.EvalTokens([]int32{1}, -1) }, ErrOutOfContext},
		{"position skips ahead", func() ([]float32, error) { return head.EvalTokens([]int32{1}, 3) }, ErrBadInput},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.eval(); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	// The windows still work after the refusals.
	h, err := head.EvalTokens([]int32{1, 2, 3}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tail.EvalHidden(h, 0); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); !errors.Is(err, ErrInUse) {
		t.Fatalf("Close with open windows = %v, want ErrInUse", err)
	}
	if err := head.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := head.EvalTokens([]int32{1}, 3); !errors.Is(err, ErrClosed) {
		t.Fatalf("eval on a closed window = %v, want ErrClosed", err)
	}
	if err := m.Prefetch([]ByteRange{{Off: info.FileSize - 10, Len: 20}}); !errors.Is(err, ErrBadByteRange) {
		t.Fatalf("Prefetch past the end = %v, want ErrBadByteRange", err)
	}
}

// TestLoadBackendsEmptyDir: a directory without backend libraries adds no
// device and does not disturb the CPU engine.
func TestLoadBackendsEmptyDir(t *testing.T) {
	before := GPUCount()
	if got := LoadBackends(t.TempDir()); got != before {
		t.Fatalf("LoadBackends(empty dir) = %d GPUs, had %d", got, before)
	}
	m := openT(t, stories)
	w := newWindowT(t, m, WindowParams{First: 0, Last: m.Info().NLayer, Embed: true, Output: true, NCtx: 8, Threads: 1})
	if _, err := w.EvalTokens([]int32{1, 2}, 0); err != nil {
		t.Fatal(err)
	}
}
