package profile

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"homering/engine/profile/sysinfo"
	"homering/engine/ring/transport"
)

// Link is the measured profile of one link to a peer.
type Link struct {
	Peer string `json:"peer"`
	// RTTSec is the median round trip of a small ping on the idle link.
	RTTSec float64 `json:"rtt_s"`
	// HiddenBytes is the message size measured (one hidden state, 4e bytes).
	HiddenBytes int `json:"hidden_bytes"`
	// HiddenRTTSec is the median round trip of a hidden-state-sized ping
	// echoed back (the payload crosses the link twice).
	HiddenRTTSec float64 `json:"hidden_rtt_s"`
	// BytesPerSec is the throughput for such messages: 2·HiddenBytes over
	// the extra round-trip time they take beyond a small ping.
	BytesPerSec float64 `json:"bytes_per_s"`
	// SendSec is t^comm: RTT/2 + HiddenBytes/BytesPerSec, Halda's time to
	// send one hidden state (halda.Device.LinkSec[peer]).
	SendSec float64 `json:"send_s"`
}

// ErrLinkEcho is returned when the peer answers a ping with anything but
// the same payload (transport.ErrEcho).
var ErrLinkEcho = transport.ErrEcho

// LinkOptions bound a link measurement.
type LinkOptions struct {
	Pings       int // small pings (default 7, the thesis's ring size)
	HiddenPings int // hidden-state-sized pings (default 7)
	HiddenBytes int // default 4·4096 (a 7B model's hidden state)
}

// MeasureLink measures the link c leads over (the real transport: mutual TLS
// websocket) with MsgPing frames, which every Homering agent echoes as
// MsgPong (app/node). Run it while the link is idle: the thesis saw latency
// grow during generation. ctx bounds the whole measurement by closing c when
// it ends early.
func MeasureLink(ctx context.Context, c *transport.Conn, peer string, o LinkOptions) (Link, error) {
	if o.Pings <= 0 {
		o.Pings = 7
	}
	if o.HiddenPings <= 0 {
		o.HiddenPings = 7
	}
	if o.HiddenBytes <= 0 {
		o.HiddenBytes = 4 * 4096
	}
	stop := context.AfterFunc(ctx, func() { _ = c.Close() }) // unblocks Recv: a cancelled probe
	defer stop()
	l := Link{Peer: peer, HiddenBytes: o.HiddenBytes}
	small := []byte("homering-link-probe")
	big := make([]byte, o.HiddenBytes)
	for i := range big {
		big[i] = byte(i * 7)
	}
	rtt := func(p []byte, n int) (float64, error) {
		ds, err := transport.Pings(c, n+1, p, sysinfo.Now) // the first is a warm-up; Now: a loopback ping is microseconds
		if err != nil {
			if errors.Is(err, transport.ErrEcho) {
				return 0, err
			}
			return 0, linkErr(ctx, err)
		}
		ds = ds[1:]
		slices.Sort(ds)
		return ds[len(ds)/2].Seconds(), nil
	}
	var err error
	if l.RTTSec, err = rtt(small, o.Pings); err != nil {
		return l, err
	}
	if l.HiddenRTTSec, err = rtt(big, o.HiddenPings); err != nil {
		return l, err
	}
	extra := l.HiddenRTTSec - l.RTTSec
	// On loopback the extra time can drown in noise; a floor of 1 µs keeps
	// the throughput finite and the send time honest (≈ RTT/2).
	extra = max(extra, 1e-6)
	l.BytesPerSec = 2 * float64(len(big)-len(small)) / extra
	l.SendSec = l.RTTSec/2 + float64(o.HiddenBytes)/l.BytesPerSec
	return l, nil
}

func linkErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("profile: link measurement: %w", ctx.Err())
	}
	return fmt.Errorf("profile: link measurement: %w", err)
}
