package slice

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"homering/engine/gguf"
	"homering/engine/ring/transport"
	"homering/engine/ring/wire"
)

// MaxChunk bounds one SliceChunk: large enough to stream at link speed,
// small enough to stay far below the frame limit.
const MaxChunk = 4 << 20

// ServeChunk is the most tensor bytes the head puts in one SliceChunk,
// whatever a worker asks for (ConnSource asks again for the rest). Each
// chunk is in the head's memory three times while it goes (read, encoded,
// framed) and a worker's once more: with 4 MiB chunks and two workers
// fetching, the head's Go heap peaked at 35 MB of anonymous memory, which
// memory pressure counts; with 1 MiB it stays near the runtime's minimum.
const ServeChunk = 1 << 20

// Slices travel on their own connection (transport.PurposeSlice, which the
// head dials to each worker next to its ring link; the worker sends the
// requests) so that megabytes of weights never queue in front of
// activations.

// Server serves the head's model file to workers.
type Server struct {
	Model [32]byte // SHA-256 of the header bytes: the model's identity
	f     *os.File
	g     *gguf.File
	head  []byte

	mu     sync.Mutex
	hashes *wire.SliceList // computed on first request, guarded by mu

	served atomic.Int64 // chunk bytes sent since the heap was last given back
}

// freeEvery is how many chunk bytes the server sends between giving the
// Go heap's free memory back to the OS: every chunk leaves its copies as
// garbage, and the runtime returns freed memory slowly on its own (at the
// peak of a 0.9 GB transfer 9 of the head's 18 MB of Go heap were free
// memory it had not returned).
const freeEvery = 32 << 20

// NewServer opens the model file at path.
func NewServer(path string) (*Server, error) {
	g, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("slice: server: %w", err)
	}
	head := make([]byte, g.DataOffset)
	if _, err := f.ReadAt(head, 0); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("slice: server: read header: %w", err)
	}
	return &Server{Model: sha256.Sum256(head), f: f, g: g, head: head}, nil
}

// Close closes the file.
func (s *Server) Close() error { return s.f.Close() }

func (s *Server) list() (*wire.SliceList, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hashes != nil {
		return s.hashes, nil
	}
	l := &wire.SliceList{Model: s.Model, FileSize: uint64(s.g.Size)}
	for _, t := range s.g.Tensors {
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(s.f, t.Offset, t.Size)); err != nil {
			return nil, fmt.Errorf("slice: hash %s: %w", t.Name, err)
		}
		l.Tensors = append(l.Tensors, wire.SliceTensor{Name: t.Name, Size: uint64(t.Size), SHA256: [32]byte(h.Sum(nil))})
	}
	s.hashes = l
	return l, nil
}

// Serve answers slice requests on c until it closes or a request is bad.
func (s *Server) Serve(ctx context.Context, c *transport.Conn) error {
	return s.ServeCounted(ctx, c, nil)
}

// Need is how many tensor bytes a worker holding layers fetches at most (a
// cold cache): the size of its slice's tensors, for progress bars.
func (s *Server) Need(layers []Range) int64 {
	var n int64
	for _, t := range Tensors(Spec{Source: s.g, Layers: layers}) {
		n += t.Size
	}
	return n
}

// ServeCounted is Serve that calls sent (when non-nil) with the tensor
// bytes of each chunk it sent, for the head's transfer progress.
func (s *Server) ServeCounted(ctx context.Context, c *transport.Conn, sent func(n int64)) error {
	defer c.Close()
	var buf []byte // a chunk's bytes, reused for the next
	for ctx.Err() == nil {
		f, err := c.Recv()
		if err != nil {
			return nil // the worker is done or gone
		}
		m, err := wire.Decode(wire.Type(f.Type), f.Payload)
		req, ok := m.(*wire.SliceRequest)
		if err != nil || !ok {
			_ = c.SendError(transport.CodeProtocol, "expected a slice request")
			return fmt.Errorf("slice: server: bad request (type %d): %v", f.Type, err)
		}
		resp, err := s.answer(req, &buf)
		if err != nil {
			_ = c.SendError(transport.CodeProtocol, err.Error())
			return err
		}
		typ, p, err := wire.Encode(resp)
		if err != nil {
			return err
		}
		if err := c.Send(transport.Frame{Type: transport.MsgType(typ), Payload: p}); err != nil {
			return nil
		}
		if ch, ok := resp.(*wire.SliceChunk); ok {
			if sent != nil && req.Name != wire.SliceHeader {
				sent(int64(len(ch.Data)))
			}
			if s.served.Add(int64(len(ch.Data))) >= freeEvery {
				s.served.Store(0)
				debug.FreeOSMemory()
			}
		}
	}
	return ctx.Err()
}

// answer answers one request; a chunk's data is read into *buf (grown
// as needed, at most ServeChunk).
func (s *Server) answer(req *wire.SliceRequest, buf *[]byte) (wire.Msg, error) {
	if req.Model != s.Model {
		return nil, errors.New("slice: slice request for another model")
	}
	var src io.ReaderAt
	var size int64
	switch req.Name {
	case wire.SliceIndex:
		return s.list()
	case wire.SliceHeader:
		src, size = bytes.NewReader(s.head), int64(len(s.head))
	default:
		t, ok := s.g.Tensor(req.Name)
		if !ok {
			return nil, fmt.Errorf("slice: no tensor %q in the model", req.Name)
		}
		src, size = io.NewSectionReader(s.f, t.Offset, t.Size), t.Size
	}
	if req.Offset > uint64(size) {
		return nil, fmt.Errorf("slice: offset %d past the %d bytes of %s", req.Offset, size, req.Name)
	}
	n := min(int64(req.Length), ServeChunk, size-int64(req.Offset))
	if int64(cap(*buf)) < n {
		*buf = make([]byte, ServeChunk)
	}
	data := (*buf)[:n]
	if _, err := src.ReadAt(data, int64(req.Offset)); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("slice: read %s: %w", req.Name, err)
	}
	return &wire.SliceChunk{Model: s.Model, Name: req.Name, Offset: req.Offset, Total: uint64(size), Data: data}, nil
}

// ConnSource fetches tensors from a Server over c; it is a Source. One
// ReadTensor runs at a time.
type ConnSource struct {
	C     *transport.Conn
	Model [32]byte
	mu    sync.Mutex
	// broken is set when a read stopped with answers still in flight: they
	// would be taken for the answers to later requests, so the connection
	// is not used again.
	broken error
}

// pipeDepth is how many chunk requests ReadTensor keeps in flight: the head
// answers them in order while the worker hashes and writes the previous
// ones, so a round trip (and a wake-up of a low-priority worker) is paid per
// window, not per chunk. The head still holds one chunk at a time.
const pipeDepth = 4

func (s *ConnSource) send(req *wire.SliceRequest) error {
	typ, p, err := wire.Encode(req)
	if err != nil {
		return err
	}
	return s.C.Send(transport.Frame{Type: transport.MsgType(typ), Payload: p})
}

func (s *ConnSource) recv() (wire.Msg, error) {
	f, err := s.C.Recv()
	if err != nil {
		return nil, err
	}
	return wire.Decode(wire.Type(f.Type), f.Payload)
}

func (s *ConnSource) roundTrip(req *wire.SliceRequest) (wire.Msg, error) {
	if s.broken != nil {
		return nil, s.broken
	}
	if err := s.send(req); err != nil {
		return nil, err
	}
	return s.recv()
}

// ReadTensor fills p with bytes [off, off+len(p)) of tensor name, asking for
// at most ServeChunk bytes at a time with up to pipeDepth requests in flight.
// A goroutine sends the requests while this one reads the answers, so the
// pipeline needs no buffering in the connection (net.Pipe has none).
func (s *ConnSource) ReadTensor(ctx context.Context, name string, off int64, p []byte) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return s.broken
	}
	type ask struct{ at, n int } // a request, relative to p
	toSend := make(chan ask, pipeDepth+1)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for a := range toSend {
			if err := s.send(&wire.SliceRequest{Model: s.Model, Name: name, Offset: uint64(off) + uint64(a.at), Length: uint32(a.n)}); err != nil {
				_ = s.C.Close() // the reader below sees it
				for range toSend {
				}
				return
			}
		}
	}()
	var inflight []ask // asked for, in order: the head answers in order
	defer func() {
		close(toSend)
		if err != nil && len(inflight) > 0 {
			// Answers still on their way would be taken for those of later
			// requests: this connection is done. (The sender ends when the
			// connection closes.)
			s.broken = fmt.Errorf("slice: the slice connection is out of step after: %w", err)
			return
		}
		<-sent
	}()
	ask1 := func(a ask) {
		inflight = append(inflight, a)
		toSend <- a // never blocks: at most pipeDepth are in flight
	}
	next := 0 // the first byte of p not asked for yet
	for got := 0; got < len(p); {
		if err := ctx.Err(); err != nil {
			return err
		}
		for len(inflight) < pipeDepth && next < len(p) {
			n := min(len(p)-next, ServeChunk)
			ask1(ask{next, n})
			next += n
		}
		m, err := s.recv()
		if err != nil {
			return err
		}
		a := inflight[0]
		inflight = inflight[1:]
		c, ok := m.(*wire.SliceChunk)
		if !ok || c.Name != name || c.Offset != uint64(off)+uint64(a.at) || len(c.Data) == 0 || len(c.Data) > a.n {
			return fmt.Errorf("slice: unexpected answer to a request for %s at %d", name, off+int64(a.at))
		}
		got += copy(p[a.at:], c.Data)
		if len(c.Data) < a.n { // a head with a smaller chunk limit: ask for the rest
			ask1(ask{a.at + len(c.Data), a.n - len(c.Data)})
		}
	}
	return nil
}

// FetchIndex gets the source's header and tensor hashes: what a worker needs
// to describe its slice (Spec's Model, Source and Hashes).
func (s *ConnSource) FetchIndex(ctx context.Context) (*gguf.File, map[string][32]byte, error) {
	s.mu.Lock()
	m, err := s.roundTrip(&wire.SliceRequest{Model: s.Model, Name: wire.SliceIndex})
	s.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	l, ok := m.(*wire.SliceList)
	if !ok {
		return nil, nil, errors.New("slice: expected the tensor list")
	}
	// The header's size is unknown until it is fetched: ask chunk by chunk.
	var head []byte
	for {
		s.mu.Lock()
		m, err := s.roundTrip(&wire.SliceRequest{Model: s.Model, Name: wire.SliceHeader, Offset: uint64(len(head)), Length: MaxChunk})
		s.mu.Unlock()
		if err != nil {
			return nil, nil, err
		}
		c, ok := m.(*wire.SliceChunk)
		if !ok || c.Offset != uint64(len(head)) || c.Total > l.FileSize {
			return nil, nil, errors.New("slice: unexpected answer to a header request")
		}
		head = append(head, c.Data...)
		if uint64(len(head)) >= c.Total {
			break
		}
		if len(c.Data) == 0 {
			return nil, nil, errors.New("slice: empty header chunk")
		}
	}
	if sha256.Sum256(head) != s.Model {
		return nil, nil, errors.New("slice: the model header does not match its identity")
	}
	g, err := gguf.Read(bytes.NewReader(head), int64(l.FileSize))
	if err != nil {
		return nil, nil, err
	}
	hashes := make(map[string][32]byte, len(l.Tensors))
	for _, t := range l.Tensors {
		hashes[t.Name] = t.SHA256
	}
	return g, hashes, nil
}

var _ Source = (*ConnSource)(nil)
