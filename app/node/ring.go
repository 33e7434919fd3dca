package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"homering/discovery/identity"
	"homering/engine/ring/transport"
	"homering/halda"
)

// Ring control frames on a PurposeLink link: app/node's band (32-47) of
// the one frame table in engine/ring/transport (registry.go).
const (
	MsgProfileAsk = transport.MsgProfileAsk // head → worker: empty payload
	MsgProfile    = transport.MsgProfile    // worker → head: JSON PeerProfile
	MsgJobAsk     = transport.MsgJobAsk     // head → worker: JSON JobAsk
	MsgJobReady   = transport.MsgJobReady   // worker → head: JSON JobReady
)

// CodeRingRefused is the transport Error code of a worker that will not take
// part in a ring job; the text says why in one sentence.
const CodeRingRefused uint16 = 32

// maxControlPayload bounds a control frame's JSON: a profile is a few KB.
const maxControlPayload = 1 << 20

// Sentinels of the ring control plane.
var (
	ErrRingRefused = errors.New("node: the device refused to take part in the ring")
	ErrNoWorker    = errors.New("node: this device runs no engine for ring jobs")
)

// Worker is what a contributing device does for a head: the agent wires its
// engine supervisor in (app/agent/chat.go). Calls come from link goroutines.
type Worker interface {
	// RingProfile is this device's Halda profile: the cached measured one,
	// or a quick default (measured false) when none is cached. Its Name is
	// set by the node.
	RingProfile() (d halda.Device, measured bool)
	// ServeRing makes the engine serve ring jobs for the allowed devices
	// until ctx ends, and returns the address it listens on (host:port; an
	// unspecified host means every address of this device).
	ServeRing(ctx context.Context, allowed []identity.DeviceID) (addr string, err error)
}

// PeerProfile is a device's answer to MsgProfileAsk.
type PeerProfile struct {
	Device   halda.Device `json:"device"`
	Measured bool         `json:"measured"` // false: a default, the device has not been profiled
	// RTT is the link's round trip as the head timed it with small pings,
	// HiddenRTT with pings of a hidden state's size (neither on the wire).
	RTT, HiddenRTT time.Duration `json:"-"`
}

// JobAsk asks a worker to serve a ring job of the head.
type JobAsk struct {
	Model string `json:"model,omitempty"` // the model's file name, for the worker's log
}

// JobReady is a worker's yes: its engine listens at Addr.
type JobReady struct {
	Addr string `json:"addr"`
}

// SetWorker wires the engine side of ring jobs in; nil refuses every job.
func (n *Node) SetWorker(w Worker) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.worker = w
}

func (n *Node) workerOf() Worker {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.worker
}

// serveRingControl answers one ring control frame on an accepted link; it
// reports false when the frame is not one of them.
func (n *Node) serveRingControl(ctx context.Context, c *transport.Conn, f transport.Frame) bool {
	switch f.Type {
	case MsgProfileAsk:
		w := n.workerOf()
		n.mu.Lock()
		paired := n.paired.Has(c.Peer)
		n.mu.Unlock()
		if !paired {
			// A control link outlives pairing: ask again each time.
			_ = c.SendError(CodeRingRefused, "this device is not paired with the head")
			return true
		}
		if w == nil {
			_ = c.SendError(CodeRingRefused, "this device runs no engine, so it cannot take layers")
			return true
		}
		d, measured := w.RingProfile()
		d.Name = n.o.Identity.ID.String()
		b, _ := json.Marshal(PeerProfile{Device: d, Measured: measured})
		_ = c.Send(transport.Frame{Type: MsgProfile, Payload: b})
		return true
	case MsgJobAsk:
		var ask JobAsk
		if len(f.Payload) > 0 {
			if err := json.Unmarshal(f.Payload, &ask); err != nil {
				_ = c.SendError(CodeRingRefused, "the job request is not valid JSON")
				return true
			}
		}
		addr, err := n.acceptJob(ctx, c, ask)
		if err != nil {
			n.log.Info("refused a ring job", "peer", c.Peer, "err", err)
			_ = c.SendError(CodeRingRefused, err.Error())
			return true
		}
		b, _ := json.Marshal(JobReady{Addr: addr})
		_ = c.Send(transport.Frame{Type: MsgJobReady, Payload: b})
		return true
	}
	return false
}

// acceptJob checks that this device may work for the head on c and makes
// its engine serve: contribute on, the head paired, an engine wired in.
func (n *Node) acceptJob(ctx context.Context, c *transport.Conn, ask JobAsk) (string, error) {
	n.mu.Lock()
	contributing, paired, w := n.cfg.Contribute, n.paired.Has(c.Peer), n.worker
	allowed := make([]identity.DeviceID, 0, len(n.paired.Devices))
	for _, d := range n.paired.Devices {
		allowed = append(allowed, d.ID)
	}
	n.mu.Unlock()
	switch {
	case !contributing:
		return "", errors.New("contribute is off on this device")
	case !paired:
		return "", errors.New("this device is not paired with the head")
	case w == nil:
		return "", errors.New("this device runs no engine, so it cannot take layers")
	}
	addr, err := w.ServeRing(ctx, allowed)
	if err != nil {
		return "", fmt.Errorf("its engine cannot serve: %v", err)
	}
	n.log.Info("serving a ring job", "peer", c.Peer, "model", ask.Model, "ring_addr", addr)
	return addr, nil
}

// ctlLink is the long-lived control link to one paired peer: every look
// (AskProfileHidden) and job ask (AskJob) of this head reuses it, one
// exchange at a time, so that a chat's turn dials no TLS link when one is
// up. The peer serves any number of control frames per link (handleLink).
type ctlLink struct {
	mu sync.Mutex      // one exchange at a time
	c  *transport.Conn // nil: none up; guarded by mu
}

// control runs one ring control exchange with a paired peer on its control
// link, dialling it when none is up. A link that fails is closed and
// forgotten; when it was an old one (the peer restarted, a NAT forgot it),
// the exchange is tried once more on a fresh link. ctx ending closes the
// link mid-exchange, so no late answer is left on it.
func (n *Node) control(ctx context.Context, id identity.DeviceID, exchange func(c *transport.Conn) error) error {
	n.mu.Lock()
	addrs := n.addrsLocked(id)
	paired := n.paired.Has(id)
	l := n.ctl[id]
	if l == nil && paired {
		l = &ctlLink{}
		n.ctl[id] = l
	}
	n.mu.Unlock()
	if !paired {
		return fmt.Errorf("%s: %w", id, ErrNotPaired)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for attempt := 0; ; attempt++ {
		fresh := l.c == nil
		if fresh {
			c, err := n.dial(ctx, id, addrs, transport.PurposeLink, nil)
			if err != nil {
				return err
			}
			l.c = c
		}
		c := l.c
		stop := context.AfterFunc(ctx, func() { _ = c.Close() })
		err := exchange(c)
		interrupted := !stop()
		var re *transport.RemoteError
		if err == nil || errors.As(err, &re) || errors.Is(err, ErrRingRefused) {
			if interrupted {
				l.c = nil // closed by ctx after the answer
			}
			return err // an answer: the link is fine
		}
		_ = c.Close()
		l.c = nil
		if fresh || attempt > 0 || ctx.Err() != nil {
			return err
		}
		n.log.Debug("control link to peer failed; dialling afresh", "peer", id.Short(), "err", err)
	}
}

// closeControls closes every control link (the node stops).
func (n *Node) closeControls() {
	n.mu.Lock()
	ids := make([]identity.DeviceID, 0, len(n.ctl))
	for id := range n.ctl {
		ids = append(ids, id)
	}
	n.mu.Unlock()
	for _, id := range ids {
		n.closeControl(id)
	}
}

// closeControl closes the control link to id (unpaired, or the node stops).
func (n *Node) closeControl(id identity.DeviceID) {
	n.mu.Lock()
	l := n.ctl[id]
	delete(n.ctl, id)
	n.mu.Unlock()
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c != nil {
		_ = l.c.Close()
		l.c = nil
	}
}

// recvControl reads the answer to a control request: want, or a refusal.
func recvControl(c *transport.Conn, want transport.MsgType, v any) error {
	for {
		f, err := c.Recv()
		if err != nil {
			var re *transport.RemoteError
			if errors.As(err, &re) && re.Code == CodeRingRefused {
				return fmt.Errorf("%w: %s", ErrRingRefused, re.Text)
			}
			return err
		}
		switch f.Type {
		case transport.MsgPong:
			continue
		case want:
			if len(f.Payload) > maxControlPayload {
				return fmt.Errorf("node: a control answer of %d bytes is too big", len(f.Payload))
			}
			if err := json.Unmarshal(f.Payload, v); err != nil {
				return fmt.Errorf("node: the device's answer (type %d) is not valid JSON: %w", want, err)
			}
			return nil
		default:
			return fmt.Errorf("node: the device answered with frame type %d, want %d", f.Type, want)
		}
	}
}

// AskProfile asks a paired peer for its Halda profile and times the link
// with small pings (HiddenRTT = RTT).
func (n *Node) AskProfile(ctx context.Context, peer identity.DeviceID) (PeerProfile, error) {
	return n.AskProfileHidden(ctx, peer, 0)
}

// AskProfileHidden is AskProfile that also times pings carrying hiddenBytes
// (the hidden state a ring sends per window; its one-way time is half that
// round trip, which is what Halda charges per hop): the fastest of three
// of each size.
func (n *Node) AskProfileHidden(ctx context.Context, peer identity.DeviceID, hiddenBytes int) (PeerProfile, error) {
	var p PeerProfile
	err := n.control(ctx, peer, func(c *transport.Conn) error {
		p = PeerProfile{}
		var err error
		if p.RTT, err = n.pings(c, 3, []byte("rtt")); err != nil {
			return err
		}
		p.HiddenRTT = p.RTT
		if hiddenBytes > 0 {
			if p.HiddenRTT, err = n.pings(c, 3, make([]byte, min(hiddenBytes, transport.MaxFrame/2))); err != nil {
				return err
			}
		}
		rtt, hidden := p.RTT, p.HiddenRTT
		if err := c.Send(transport.Frame{Type: MsgProfileAsk}); err != nil {
			return err
		}
		if err := recvControl(c, MsgProfile, &p); err != nil {
			return err
		}
		if p.Device.Name != c.Peer.String() {
			return fmt.Errorf("node: device %s sent a profile named %q", c.Peer.Short(), p.Device.Name)
		}
		p.RTT, p.HiddenRTT = rtt, hidden
		return nil
	})
	if err != nil {
		return PeerProfile{}, err
	}
	return p, nil
}

// pings returns the fastest of k ping round trips carrying payload
// (transport.Pings): the first pays for warm-up, and the minimum is the
// least disturbed by the rest of the machine.
func (n *Node) pings(c *transport.Conn, k int, payload []byte) (time.Duration, error) {
	ds, err := transport.Pings(c, k, payload, n.o.Now)
	if err != nil {
		return 0, err
	}
	return slices.Min(ds), nil
}

// AskJob asks a paired peer to serve a ring job and returns the address its
// engine listens on, with an unspecified host replaced by the address the
// link reached it at.
func (n *Node) AskJob(ctx context.Context, peer identity.DeviceID, ask JobAsk) (string, error) {
	var addr string
	err := n.control(ctx, peer, func(c *transport.Conn) error {
		b, _ := json.Marshal(ask)
		if err := c.Send(transport.Frame{Type: MsgJobAsk, Payload: b}); err != nil {
			return err
		}
		var r JobReady
		if err := recvControl(c, MsgJobReady, &r); err != nil {
			return err
		}
		var err error
		addr, err = ringAddr(r.Addr, c.Remote)
		return err
	})
	return addr, err
}

// ringAddr resolves a worker's listen address against the address the head
// reached it at: "[::]:41000" from 10.0.0.2:47470 is 10.0.0.2:41000.
func ringAddr(listen, remote string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil || port == "" || port == "0" {
		return "", fmt.Errorf("node: the device answered an unusable ring address %q", listen)
	}
	if a, err := netip.ParseAddr(host); err == nil && !a.IsUnspecified() {
		return listen, nil
	} else if err != nil && host != "" {
		return listen, nil // a host name
	}
	rhost, _, err := net.SplitHostPort(remote)
	if err != nil {
		return "", fmt.Errorf("node: the link's address %q has no host: %w", remote, err)
	}
	return net.JoinHostPort(rhost, port), nil
}
