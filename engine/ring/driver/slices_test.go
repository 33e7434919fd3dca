package driver

import (
	"bytes"
	"context"
	"math"
	"os"
	"testing"

	"homering/engine/ggml"
	"homering/engine/gguf"
	"homering/engine/ring"
	"homering/engine/ring/wire"
	"homering/engine/slice"
)

func sliceLink(t *testing.T, ctx context.Context, srv *SliceServer) *ConnSource {
	t.Helper()
	c, head := link(t, "worker", "head")
	go func() { _ = srv.Serve(ctx, head) }()
	return &ConnSource{C: c, Model: srv.Model}
}

// fetchIndex serves stories from a slice server over a pipe and returns
// the server, a worker's source on the pipe and the index the worker
// fetched through it (the model's header and its tensors' hashes).
func fetchIndex(t *testing.T, ctx context.Context) (*SliceServer, *ConnSource, *gguf.File, map[string][32]byte) {
	t.Helper()
	srv, err := NewSliceServer(stories)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	src := sliceLink(t, ctx, srv)
	g, hashes, err := src.FetchIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return srv, src, g, hashes
}

// A worker fetches its slice from the head over a transport connection:
// only its tensors travel, and the whole-model slice computes the same
// logits as the head's file.
func TestFetchSliceFromHead(t *testing.T) {
	ctx := context.Background()
	srv, src, g, hashes := fetchIndex(t, ctx)
	dir := t.TempDir()
	b := &slice.Builder{Dir: dir, Chunk: 8192}

	part := slice.Spec{Model: srv.Model, Source: g, Hashes: hashes, Layers: []slice.Range{{Start: 2, End: 4}}}
	res, err := b.Build(ctx, part, src)
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, ti := range slice.Tensors(part) {
		want += ti.Size
	}
	if res.Fetched != want || want == 0 {
		t.Errorf("fetched %d bytes for layers 2-4, want their %d", res.Fetched, want)
	}
	if _, err := gguf.Open(res.Path); err != nil {
		t.Errorf("fetched slice: %v", err)
	}

	whole := part
	whole.Layers, whole.Input, whole.Output = []slice.Range{{Start: 0, End: 5}}, true, true
	res, err = b.Build(ctx, whole, src)
	if err != nil {
		t.Fatal(err)
	}
	logits := func(path string) []float32 {
		m, err := ggml.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		w, err := m.NewWindow(ggml.WindowParams{First: 0, Last: m.Info().NLayer, Embed: true, Output: true, NCtx: 16, Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		out, err := w.EvalTokens(prompt, 0)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, z := logits(stories), logits(res.Path)
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(z[i]) {
			t.Fatalf("logit %d: fetched slice %v, head's file %v", i, z[i], a[i])
		}
	}
}

func TestSliceServerRefusesBadRequests(t *testing.T) {
	srv, err := NewSliceServer(stories)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, req := range []*wire.SliceRequest{
		{Model: [32]byte{9}, Name: "token_embd.weight", Length: 10},
		{Model: srv.Model, Name: "blk.99.attn_q.weight", Length: 10},
		{Model: srv.Model, Name: "token_embd.weight", Offset: 1 << 40, Length: 10},
	} {
		var buf []byte
		if m, err := srv.answer(req, &buf); err == nil {
			t.Errorf("answer(%+v) = %v, want an error", req, m)
		}
	}
}

// The head answers with at most ServeChunk bytes, whatever a worker asks
// for, and a worker reading a tensor larger than that gets every byte.
func TestSliceServerServesSmallChunks(t *testing.T) {
	const model = "../../../testdata/models/llama-1g-Q8_0.gguf" // a 70 MB token embedding
	ctx := context.Background()
	srv, err := NewSliceServer(model)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var buf []byte
	m, err := srv.answer(&wire.SliceRequest{Model: srv.Model, Name: "token_embd.weight", Length: MaxChunk}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := m.(*wire.SliceChunk); !ok || len(c.Data) != ServeChunk {
		t.Fatalf("answer to a request for %d bytes: %v, want a chunk of %d", MaxChunk, ring.MsgString(m), ServeChunk)
	}

	src := sliceLink(t, ctx, srv)
	got := make([]byte, 3*ServeChunk+123)
	if err := src.ReadTensor(ctx, "token_embd.weight", 5, got); err != nil {
		t.Fatal(err)
	}
	g, err := gguf.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	ti, _ := g.Tensor("token_embd.weight")
	f, err := os.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := make([]byte, len(got))
	if _, err := f.ReadAt(want, ti.Offset+5); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("the tensor's bytes read over the slice connection differ from the file's")
	}
}
