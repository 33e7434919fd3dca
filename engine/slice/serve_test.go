package slice

import (
	"bytes"
	"context"
	"net"
	"os"
	"testing"

	"homering/discovery/identity"
	"homering/engine/gguf"
	"homering/engine/ring/transport"
	"homering/engine/ring/wire"
)

// sliceLink serves srv on one end of a pipe with transport's framing and
// Hello, and returns a worker's source on the other.
func sliceLink(t *testing.T, ctx context.Context, srv *Server) *ConnSource {
	t.Helper()
	c1, c2 := net.Pipe()
	hello := transport.Hello{ProtoMin: wire.ProtoMin, ProtoMax: wire.ProtoMax, Purpose: transport.PurposeSlice, App: "test"}
	errc := make(chan error, 1)
	go func() {
		head, err := transport.Handshake(c2, false, hello, identity.DeviceID{1}, "worker")
		if err == nil {
			go func() { _ = srv.Serve(ctx, head) }()
		}
		errc <- err
	}()
	c, err := transport.Handshake(c1, true, hello, identity.DeviceID{2}, "head")
	if err == nil {
		err = <-errc
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &ConnSource{C: c, Model: srv.Model}
}

// fetchIndex serves stories from a slice server over a pipe and returns
// the server, a worker's source on the pipe and the index the worker
// fetched through it (the model's header and its tensors' hashes).
func fetchIndex(t *testing.T, ctx context.Context) (*Server, *ConnSource, *gguf.File, map[string][32]byte) {
	t.Helper()
	srv, err := NewServer(stories)
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
// only its tensors travel, each verified by its hash (the whole slice
// computes as the source: TestWholeSliceComputesAsTheSource).
func TestFetchSliceFromHead(t *testing.T) {
	ctx := context.Background()
	srv, src, g, hashes := fetchIndex(t, ctx)
	b := &Builder{Dir: t.TempDir(), Chunk: 8192}
	for _, spec := range []Spec{
		{Model: srv.Model, Source: g, Hashes: hashes, Layers: []Range{{Start: 2, End: 4}}},
		{Model: srv.Model, Source: g, Hashes: hashes, Layers: []Range{{Start: 0, End: 5}}, Input: true, Output: true},
	} {
		res, err := b.Build(ctx, spec, src)
		if err != nil {
			t.Fatal(err)
		}
		var want int64
		for _, ti := range Tensors(spec) {
			want += ti.Size
		}
		if res.Fetched != want || want == 0 {
			t.Errorf("fetched %d bytes for layers %v, want their %d", res.Fetched, spec.Layers, want)
		}
		if _, err := gguf.Open(res.Path); err != nil {
			t.Errorf("fetched slice: %v", err)
		}
	}
}

func TestServerRefusesBadRequests(t *testing.T) {
	srv, err := NewServer(stories)
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
func TestServerServesSmallChunks(t *testing.T) {
	const model = "../../testdata/models/llama-1g-Q8_0.gguf" // a 70 MB token embedding
	ctx := context.Background()
	srv, err := NewServer(model)
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
		t.Fatalf("answer to a request for %d bytes: %v, want a chunk of %d", MaxChunk, m, ServeChunk)
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
