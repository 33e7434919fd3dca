package transport

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// ErrEcho is returned when a peer answers a ping with anything but a pong
// of the same payload.
var ErrEcho = errors.New("transport: the peer did not echo the ping")

// Pings times k round trips of a MsgPing carrying payload over c, one at a
// time (every Homering agent answers MsgPing with a MsgPong of the same
// payload), and returns them in order. now is the clock. It is the one
// link-time measurer: the head's looks at peers take the fastest, the
// profiler's link probe the median. Callers bound it by closing c.
func Pings(c *Conn, k int, payload []byte, now func() time.Time) ([]time.Duration, error) {
	out := make([]time.Duration, 0, k)
	for range k {
		start := now()
		if err := c.Send(Frame{Type: MsgPing, Payload: payload}); err != nil {
			return out, err
		}
		f, err := c.Recv()
		if err != nil {
			return out, err
		}
		if f.Type != MsgPong || !bytes.Equal(f.Payload, payload) {
			return out, fmt.Errorf("%w: a ping of %d bytes got frame type %d of %d bytes", ErrEcho, len(payload), f.Type, len(f.Payload))
		}
		out = append(out, now().Sub(start))
	}
	return out, nil
}
