package transport

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Pings times each round trip over a real link, and a peer that answers a
// ping with another payload is caught.
func TestPings(t *testing.T) {
	srv, cli := newNode(t, "srv"), newNode(t, "cli")
	srv.paired[cli.id.ID] = true
	cli.paired[srv.id.ID] = true
	srv.serve(t, func(ctx context.Context, c *Conn) {
		defer c.Close()
		for {
			f, err := c.Recv()
			if err != nil {
				return
			}
			if string(f.Payload) == "lie" {
				f.Payload = []byte("lies")
			}
			_ = c.Send(Frame{MsgPong, f.Payload})
		}
	})
	c, err := cli.ep.Dial(context.Background(), srv.addr, srv.id.ID, PurposeLink)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ds, err := Pings(c, 4, make([]byte, 8192), time.Now)
	if err != nil || len(ds) != 4 {
		t.Fatalf("Pings = %v, %v; want 4 round trips", ds, err)
	}
	for _, d := range ds {
		if d <= 0 || d > 5*time.Second {
			t.Errorf("round trip %v over loopback", d)
		}
	}
	if _, err := Pings(c, 1, []byte("lie"), time.Now); !errors.Is(err, ErrEcho) {
		t.Errorf("a wrong echo: %v, want ErrEcho", err)
	}
}
