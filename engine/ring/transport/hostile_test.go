package transport

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"homering/discovery/identity"
	"homering/internal/testwait"
)

// rawLink opens the websocket of a link as a paired client would, without
// the Hello, so that the test can send what a broken peer sends.
func rawLink(t *testing.T, from *node, to *node) *websocket.Conn {
	t.Helper()
	var seen identity.DeviceID
	d := websocket.Dialer{TLSClientConfig: from.ep.clientTLS(to.id.ID, &seen), HandshakeTimeout: 5 * time.Second}
	ws, resp, err := d.Dial("wss://"+to.addr+Path, nil)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	return ws
}

func waitCount(t *testing.T, n *node, reason string, want uint64) {
	t.Helper()
	testwait.True(t, 5*time.Second, fmt.Sprintf("refusals[%s] = %d", reason, want), func() bool {
		return n.ep.Refusals().Snapshot()[reason] == want
	})
}

// TestHostilePeers: each way a device can be refused at link setup is
// refused, logged and counted under its own reason, and the server keeps
// serving its paired peer.
func TestHostilePeers(t *testing.T) {
	srv, cli, stranger := newNode(t, "srv"), newNode(t, "cli"), newNode(t, "stranger")
	srv.paired[cli.id.ID] = true
	cli.paired[srv.id.ID] = true
	links := make(chan error, 8)
	srv.serve(t, func(ctx context.Context, c *Conn) {
		defer c.Close()
		for {
			f, err := c.Recv()
			if err != nil {
				links <- err
				return
			}
			if f.Type == MsgPing {
				_ = c.Send(Frame{MsgPong, f.Payload})
			}
		}
	})
	ctx := context.Background()

	t.Run("unpaired", func(t *testing.T) {
		if _, err := stranger.ep.Dial(ctx, srv.addr, srv.id.ID, PurposeLink); !errors.Is(err, ErrRefused) {
			t.Fatalf("error = %v, want ErrRefused", err)
		}
		waitCount(t, srv, RefusedUnpaired, 1)
	})
	t.Run("another device's certificate without its key", func(t *testing.T) {
		// The stranger presents cli's certificate, which srv has pinned,
		// but can only sign with its own key.
		thief := newNode(t, "thief")
		thief.ep.cfg.Identity = &identity.Identity{ID: cli.id.ID, Cert: tls.Certificate{
			Certificate: cli.id.Cert.Certificate, Leaf: cli.id.Cert.Leaf, PrivateKey: stranger.id.Cert.PrivateKey}}
		if _, err := thief.ep.Dial(ctx, srv.addr, srv.id.ID, PurposeLink); err == nil {
			t.Fatal("a link came up with a stolen certificate")
		}
		waitCount(t, srv, RefusedWrongID, 1)
		// The refusal is counted before its line is logged: wait for it
		// (-race on a busy machine once read the log between the two).
		testwait.True(t, 5*time.Second, "a log line for the stolen certificate", func() bool {
			return strings.Contains(srv.logs.String(), "presenting another device's certificate")
		})
	})
	t.Run("no protocol version in common", func(t *testing.T) {
		future := newNode(t, "future")
		future.ep.cfg.Identity = cli.id
		future.ep.cfg.Hello = func() Hello { return Hello{ProtoMin: 9, ProtoMax: 9, App: "9.0.0", Name: "future"} }
		var ve *VersionError
		if _, err := future.ep.Dial(ctx, srv.addr, srv.id.ID, PurposeLink); !errors.As(err, &ve) {
			t.Fatalf("error = %v, want a VersionError", err)
		}
		waitCount(t, srv, RefusedVersion, 1)
	})
	t.Run("a first frame that is not a Hello", func(t *testing.T) {
		ws := rawLink(t, cli, srv)
		if err := ws.WriteMessage(websocket.BinaryMessage, []byte{0, 0, 0, 3, byte(MsgHello), 0xff, 0xff}); err != nil {
			t.Fatal(err)
		}
		waitCount(t, srv, RefusedHello, 1)
	})
	t.Run("a Hello whose length prefix says 1 GB", func(t *testing.T) {
		ws := rawLink(t, cli, srv)
		before := totalAlloc()
		if err := ws.WriteMessage(websocket.BinaryMessage, []byte{0x40, 0, 0, 0, byte(MsgHello)}); err != nil {
			t.Fatal(err)
		}
		waitCount(t, srv, RefusedFrameSize, 1)
		if grew := totalAlloc() - before; grew > 64<<20 {
			t.Errorf("the server allocated %d MiB for a frame it refused", grew>>20)
		}
	})
	t.Run("a linked peer's frame whose length prefix says 1 GB", func(t *testing.T) {
		c, err := cli.ep.Dial(ctx, srv.addr, srv.id.ID, PurposeLink)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		before := totalAlloc()
		var hdr [5]byte
		binary.BigEndian.PutUint32(hdr[:], 1<<30)
		hdr[4] = byte(MsgRingFirst)
		if _, err := c.rw.Write(hdr[:]); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-links:
			if !errors.Is(err, ErrFrameTooBig) {
				t.Errorf("the server's Recv ended with %v, want ErrFrameTooBig", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the server still waits for a 1 GB frame")
		}
		if grew := totalAlloc() - before; grew > 64<<20 {
			t.Errorf("the server allocated %d MiB for a frame it refused", grew>>20)
		}
	})
	if got := FormatRefusals(srv.ep.Refusals().Snapshot()); got != "1 malformed hello, 1 oversized frame, 1 protocol version, 1 unpaired, 1 wrong ID" {
		t.Errorf("refusals: %s", got)
	}
	// Still serving its paired peer.
	c, err := cli.ep.Dial(ctx, srv.addr, srv.id.ID, PurposeLink)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Send(Frame{MsgPing, []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if f, err := c.Recv(); err != nil || f.Type != MsgPong {
		t.Fatalf("pong after the hostile peers: %v %v", f.Type, err)
	}
}

func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestConnectionFlood: 500 connection attempts at once (half unpaired TLS
// clients, half bare TCP connections that close at once) do not hold up a
// paired peer's pings beyond a bound, and when the flood is over the
// server holds no more goroutines or file descriptors than before it.
func TestConnectionFlood(t *testing.T) {
	srv, cli, stranger := newNode(t, "srv"), newNode(t, "cli"), newNode(t, "stranger")
	srv.paired[cli.id.ID] = true
	srv.serve(t, echo)
	ctx := context.Background()
	c, err := cli.ep.Dial(ctx, srv.addr, srv.id.ID, PurposeLink)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ping := func() time.Duration {
		start := time.Now()
		if err := c.Send(Frame{MsgPing, []byte("p")}); err != nil {
			t.Fatal(err)
		}
		if f, err := c.Recv(); err != nil || f.Type != MsgPong {
			t.Fatalf("pong: %v %v", f.Type, err)
		}
		return time.Since(start)
	}
	ping()
	goroutines, fds := runtime.NumGoroutine(), openFDs(t)

	const flood = 500
	var wg sync.WaitGroup
	for i := range flood {
		wg.Go(func() {
			if i%2 == 0 {
				_, _ = stranger.ep.Dial(ctx, srv.addr, srv.id.ID, PurposeLink)
				return
			}
			if raw, err := net.Dial("tcp", srv.addr); err == nil {
				_ = raw.Close()
			}
		})
	}
	// Pings while the flood is on: the paired link is served throughout.
	const bound = 2 * time.Second
	var worst time.Duration
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for pings := 0; ; pings++ {
		worst = max(worst, ping())
		select {
		case <-done:
		default:
			continue
		}
		t.Logf("%d pings during the flood, the slowest %v", pings+1, worst)
		break
	}
	if worst > bound {
		t.Errorf("a ping took %v during the flood, bound %v", worst, bound)
	}
	testwait.True(t, 20*time.Second, "all flood connections refused and counted", func() bool {
		r := srv.ep.Refusals().Snapshot()
		return r[RefusedUnpaired] == flood/2 && r[RefusedHandshake] == flood/2
	})
	testwait.True(t, 20*time.Second, "goroutines and file descriptors back to their level before the flood", func() bool {
		return runtime.NumGoroutine() <= goroutines && openFDs(t) <= fds
	})
	if d := ping(); d > bound {
		t.Errorf("ping after the flood took %v", d)
	}
	if logs := srv.logs.String(); strings.Count(logs, "connection dropped before its TLS handshake completed") > 5 {
		t.Errorf("the flood's dropped connections filled the log:\n%s", logs)
	}
}

// openFDs is this process's open file descriptors (Linux's /proc; other
// systems have no cheap count, and the goroutine check covers them).
func openFDs(t *testing.T) int {
	if runtime.GOOS != "linux" {
		return 0
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
