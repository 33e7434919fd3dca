package transport

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/discovery/identity"
	"homering/internal/testlog"
	"homering/internal/testwait"
)

func TestFrameRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		f    Frame
	}{
		{"empty payload", Frame{MsgPing, []byte{}}},
		{"payload", Frame{MsgRingFirst, []byte("hidden state bytes")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteFrame(&b, tt.f); err != nil {
				t.Fatal(err)
			}
			got, err := ReadFrame(&b, MaxFrame)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.f, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadFrameErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"over limit before allocating", []byte{0xff, 0xff, 0xff, 0xff, 1}, ErrFrameTooBig},
		{"zero length", []byte{0, 0, 0, 0}, ErrFrameEmpty},
		{"truncated payload", []byte{0, 0, 0, 5, 1, 2}, io.ErrUnexpectedEOF},
		{"nothing", nil, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ReadFrame(bytes.NewReader(tt.in), 1024); !errors.Is(err, tt.want) {
				t.Errorf("error = %v, want %v", err, tt.want)
			}
		})
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 1, 0, 1})
	var seed bytes.Buffer
	_ = WriteFrame(&seed, Frame{MsgHello, Hello{ProtoMin: 1, ProtoMax: 2, Purpose: PurposeLink, App: "0.1", Name: "desk"}.encode()})
	f.Add(seed.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := ReadFrame(bytes.NewReader(b), 1<<16)
		if err != nil {
			return
		}
		if len(fr.Payload)+5 > len(b) {
			t.Fatalf("frame of %d bytes from %d input bytes", len(fr.Payload), len(b))
		}
		// Whatever decodes as a Hello must encode back to the same bytes.
		if h, err := decodeHello(fr.Payload); err == nil && !bytes.Equal(h.encode(), fr.Payload) {
			t.Fatalf("hello %+v re-encodes differently", h)
		}
	})
}

func TestHelloOverPipe(t *testing.T) {
	a := Hello{ProtoMin: 1, ProtoMax: 3, Purpose: PurposeLink, App: "0.3.0", Name: "desk"}
	tests := []struct {
		name      string
		server    Hello
		wantProto uint16
		wantErr   string
	}{
		{"overlap picks the highest", Hello{ProtoMin: 2, ProtoMax: 5, Purpose: PurposeLink, App: "0.5.0", Name: "attic"}, 3, ""},
		{"server too new", Hello{ProtoMin: 4, ProtoMax: 5, Purpose: PurposeLink, App: "0.5.0"}, 0,
			"it runs Homering 0.5.0 (link protocol 4-5), this device runs Homering 0.3.0 (link protocol 1-3); update this device"},
		{"server too old", Hello{ProtoMin: 0, ProtoMax: 0, Purpose: PurposeLink, App: "0.0.9"}, 0,
			"update the other device (pipe)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c1, c2 := net.Pipe()
			defer c1.Close()
			defer c2.Close()
			type res struct {
				c   *Conn
				err error
			}
			ch := make(chan res, 1)
			go func() {
				c, err := Handshake(c2, false, tt.server, identity.DeviceID{1}, "pipe")
				ch <- res{c, err}
			}()
			c, err := Handshake(c1, true, a, identity.DeviceID{2}, "pipe")
			<-ch
			if tt.wantErr != "" {
				var ve *VersionError
				if !errors.As(err, &ve) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want a VersionError containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Proto != tt.wantProto || c.Hello.Name != tt.server.Name {
				t.Errorf("proto %d name %q, want %d %q", c.Proto, c.Hello.Name, tt.wantProto, tt.server.Name)
			}
		})
	}
}

type node struct {
	id     *identity.Identity
	ep     *Endpoint
	addr   string
	logs   *testlog.Buffer
	mu     sync.Mutex
	paired map[identity.DeviceID]bool
	window bool
	got    chan *Conn
}

func newNode(t *testing.T, name string) *node {
	t.Helper()
	id, err := identity.LoadOrCreate(t.TempDir(), time.Now(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	n := &node{id: id, logs: &testlog.Buffer{}, paired: map[identity.DeviceID]bool{}, got: make(chan *Conn, 4)}
	n.ep = New(Config{
		Identity: id,
		Hello:    func() Hello { return Hello{ProtoMin: 1, ProtoMax: 1, App: "test", Name: name} },
		Authorize: func(p identity.DeviceID) Decision {
			n.mu.Lock()
			defer n.mu.Unlock()
			switch {
			case n.paired[p]:
				return AllowLink
			case n.window:
				return AllowPairing
			}
			return Refuse
		},
		Log:     slog.New(slog.NewTextHandler(io.MultiWriter(n.logs, testlog.Writer(t)), nil)),
		Timeout: 5 * time.Second,
	})
	return n
}

func (n *node) serve(t *testing.T, handle func(context.Context, *Conn)) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n.addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.ep.Serve(ctx, ln, handle) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

func echo(ctx context.Context, c *Conn) {
	defer c.Close()
	for {
		f, err := c.Recv()
		if err != nil {
			return
		}
		if f.Type == MsgPing {
			_ = c.Send(Frame{MsgPong, f.Payload})
		}
	}
}

func TestLinkOverTLSWebsocket(t *testing.T) {
	srv, cli, stranger := newNode(t, "srv"), newNode(t, "cli"), newNode(t, "stranger")
	srv.paired[cli.id.ID] = true
	cli.paired[srv.id.ID] = true
	srv.serve(t, echo)
	ctx := context.Background()

	t.Run("paired peer is accepted and frames flow", func(t *testing.T) {
		c, err := cli.ep.Dial(ctx, srv.addr, srv.id.ID, PurposeLink)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if c.Peer != srv.id.ID || c.Hello.Name != "srv" || c.Proto != 1 {
			t.Errorf("peer %v name %q proto %d", c.Peer.Short(), c.Hello.Name, c.Proto)
		}
		big := bytes.Repeat([]byte("x"), 1<<20)
		if err := c.Send(Frame{MsgPing, big}); err != nil {
			t.Fatal(err)
		}
		f, err := c.Recv()
		if err != nil || f.Type != MsgPong || !bytes.Equal(f.Payload, big) {
			t.Fatalf("pong: type %d, %d bytes, %v", f.Type, len(f.Payload), err)
		}
	})
	t.Run("unpaired peer is refused in the TLS handshake and logged with its address", func(t *testing.T) {
		_, err := stranger.ep.Dial(ctx, srv.addr, srv.id.ID, PurposeLink)
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("error = %v, want ErrRefused", err)
		}
		// The client can see the refusal before the server has logged it.
		testwait.True(t, 5*time.Second, "the server's log line of the refusal with address and device", func() bool {
			logs := srv.logs.String()
			return strings.Contains(logs, "refused connection from an unpaired device") && strings.Contains(logs, "peer="+stranger.id.ID.String()) && strings.Contains(logs, "127.0.0.1:")
		})
	})
	t.Run("wrong key at the address is rejected by the client", func(t *testing.T) {
		_, err := cli.ep.Dial(ctx, srv.addr, stranger.id.ID, PurposeLink)
		if !errors.Is(err, ErrWrongDevice) {
			t.Fatalf("error = %v, want ErrWrongDevice", err)
		}
	})
	t.Run("probe learns the ID without pairing", func(t *testing.T) {
		got, err := stranger.ep.Probe(ctx, srv.addr)
		if err != nil || got != srv.id.ID {
			t.Fatalf("Probe = %v, %v; want %v", got.Short(), err, srv.id.ID.Short())
		}
	})
}

func TestPairing(t *testing.T) {
	code, _ := identity.ParseCode("796-428-019")
	wrong, _ := identity.ParseCode("123-456-782")
	tests := []struct {
		name     string
		headCode identity.Code
		purpose  Purpose
		wantOK   bool
		wantErr  error
	}{
		{"right code pins both", code, PurposePair, true, nil},
		{"wrong code pins nobody", wrong, PurposePair, false, identity.ErrPakeConfirm},
		{"open window does not allow a link", code, PurposeLink, false, ErrRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			worker, head := newNode(t, "worker"), newNode(t, "head")
			worker.window = true
			workerDone := make(chan error, 1)
			worker.serve(t, func(ctx context.Context, c *Conn) {
				defer c.Close()
				workerDone <- PairWorker(c, worker.id.ID, code, rand.Reader, func() error {
					worker.mu.Lock()
					defer worker.mu.Unlock()
					worker.paired[c.Peer] = true
					return nil
				})
			})
			c, err := head.ep.Dial(context.Background(), worker.addr, identity.DeviceID{}, tt.purpose)
			if err == nil {
				err = PairHead(c, head.id.ID, tt.headCode, rand.Reader)
				_ = c.Close()
				if err == nil && c.Peer != worker.id.ID {
					t.Fatalf("head saw %v", c.Peer.Short())
				}
				if werr := <-workerDone; werr != nil {
					t.Logf("worker: %v", werr)
				}
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("head error = %v, want %v", err, tt.wantErr)
			}
			worker.mu.Lock()
			defer worker.mu.Unlock()
			if got := worker.paired[head.id.ID]; got != tt.wantOK {
				t.Errorf("worker pinned head = %v, want %v", got, tt.wantOK)
			}
		})
	}
}
