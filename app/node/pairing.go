package node

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	"homering/app/api/apitype"
	"homering/discovery"
	"homering/discovery/identity"
	"homering/engine/ring/transport"
)

// ShowCode opens a pairing window on this device (the one to be trusted) and
// returns the code to type on the head. A new call replaces the old code.
func (n *Node) ShowCode() (apitype.PairShow, error) {
	code, err := identity.NewCode(n.o.Random)
	if err != nil {
		return apitype.PairShow{}, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.cfg.Contribute || n.listening == "" {
		return apitype.PairShow{}, ErrNotContributing
	}
	exp := n.o.Now().Add(PairWindow)
	n.window = &pairWindow{code: code, expires: exp}
	n.log.Info("pairing window open", "expires", exp.Format(time.RFC3339))
	return apitype.PairShow{Code: code.String(), Expires: exp}, nil
}

// PairStatus reports the window and the last result.
func (n *Node) PairStatus() apitype.PairStatus {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.pairStatusLocked()
}

func (n *Node) pairStatusLocked() apitype.PairStatus {
	var s apitype.PairStatus
	if n.window != nil && n.o.Now().Before(n.window.expires) {
		s.Open, s.Expires = true, ptr(n.window.expires)
	}
	if n.lastPair != nil {
		s.Last = ptr(*n.lastPair)
	}
	return s
}

// servePairing is the worker side: one attempt per window.
func (n *Node) servePairing(c *transport.Conn, log *slog.Logger) {
	n.mu.Lock()
	w := n.window
	n.window = nil // one attempt, right or wrong
	n.mu.Unlock()
	if w == nil || !n.o.Now().Before(w.expires) {
		// No code shown: a replayed or late exchange, or a stranger trying.
		n.ep.Refusals().Add(transport.RefusedPairReplay)
		log.Warn("refused a pairing attempt: no pairing code is shown", "name", c.Hello.Name)
		_ = c.SendError(transport.CodeRefused, "no pairing code is shown on this device")
		return
	}
	log.Info("pairing attempt", "name", c.Hello.Name)
	err := transport.PairWorker(c, n.o.Identity.ID, w.code, n.o.Random, func() error {
		return n.pin(c.Peer, c.Hello.Name)
	})
	res := apitype.PairResult{Peer: c.Peer, Name: c.Hello.Name, OK: err == nil, At: n.o.Now()}
	if err != nil {
		res.Error = err.Error()
		n.ep.Refusals().Add(transport.RefusedPairFailed)
		log.Warn("pairing failed; the code is used up", "err", err)
	} else {
		log.Info("paired", "name", c.Hello.Name)
	}
	n.mu.Lock()
	n.lastPair = &res
	n.publishLocked(pairEvent(res))
	n.mu.Unlock()
}

func pairEvent(r apitype.PairResult) apitype.Event {
	e := apitype.Event{Kind: "paired", At: r.At, Peer: &apitype.Peer{ID: r.Peer, Name: r.Name, Paired: r.OK}, Reason: r.Error}
	if !r.OK {
		e.Kind = "pair_failed"
	}
	return e
}

func (n *Node) pin(id identity.DeviceID, name string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.paired
	p.Devices = append([]identity.PairedDevice(nil), p.Devices...)
	p.Add(identity.PairedDevice{ID: id, Name: name, PairedAt: n.o.Now().UTC()})
	if err := identity.SavePaired(n.o.Dir, p); err != nil {
		return err
	}
	n.paired = p
	return nil
}

// EnterCode is the head side: pair with peer (ID, name or address) using the
// code shown on it.
func (n *Node) EnterCode(ctx context.Context, peer, codeText string) (apitype.Peer, error) {
	code, err := identity.ParseCode(codeText)
	if err != nil {
		return apitype.Peer{}, err
	}
	expect, addrs, err := n.resolve(peer)
	if err != nil {
		return apitype.Peer{}, err
	}
	// Any certificate during pairing: the SPAKE2 transcript binds the one we
	// saw, and we check it against the expected ID when we have one.
	c, err := n.dial(ctx, identity.DeviceID{}, addrs, transport.PurposePair, nil)
	if err != nil {
		return apitype.Peer{}, err
	}
	defer c.Close()
	if !expect.IsZero() && c.Peer != expect {
		return apitype.Peer{}, fmt.Errorf("%s is %s, not %s: %w", c.Remote, c.Peer.Short(), expect.Short(), transport.ErrWrongDevice)
	}
	if c.Peer == n.o.Identity.ID {
		return apitype.Peer{}, ErrSelf
	}
	res := apitype.PairResult{Peer: c.Peer, Name: c.Hello.Name, At: n.o.Now()}
	err = transport.PairHead(c, n.o.Identity.ID, code, n.o.Random)
	if err == nil {
		err = n.pin(c.Peer, c.Hello.Name)
	}
	res.OK = err == nil
	if err != nil {
		res.Error = err.Error()
	}
	n.mu.Lock()
	n.lastPair = &res
	n.publishLocked(pairEvent(res))
	n.mu.Unlock()
	if err != nil {
		return apitype.Peer{}, err
	}
	n.log.Info("paired", "peer", c.Peer, "name", c.Hello.Name, "addr", c.Remote)
	// A device added by address (no mDNS record) was seen without its name
	// or its contributing, which AddPeer learns only over a link of a paired
	// device: without this sighting it would stay out of every ring until
	// added again. It showed a code, which it does only while contributing.
	if p := n.peerView(c.Peer); slices.Contains(p.Sources, discovery.SourceManual.String()) {
		if ap, err := netip.ParseAddrPort(c.Remote); err == nil {
			rec := discovery.Record{ID: c.Peer, Port: ap.Port(), Name: c.Hello.Name, App: c.Hello.App,
				ProtoMin: c.Hello.ProtoMin, ProtoMax: c.Hello.ProtoMax, Contribute: true}
			n.mu.Lock()
			evs := n.table.Observe(discovery.Sighting{Record: rec, Source: discovery.SourceManual, Iface: n.ifaceForLocked(ap.Addr()), Addrs: []netip.AddrPort{ap}}, n.o.Now())
			n.mu.Unlock()
			n.logEvents(evs)
		}
	}
	return n.peerView(c.Peer), nil
}

func (n *Node) peerView(id identity.DeviceID) apitype.Peer {
	for _, p := range n.Peers().Peers {
		if p.ID == id {
			return p
		}
	}
	return apitype.Peer{ID: id, Short: id.Short()}
}

// Unpair forgets peer here and, when it is reachable, tells it to forget us.
func (n *Node) Unpair(ctx context.Context, peer string) (apitype.Peer, error) {
	id, addrs, err := n.resolve(peer)
	if err != nil {
		return apitype.Peer{}, err
	}
	n.mu.Lock()
	paired := n.paired.Has(id)
	n.mu.Unlock()
	if !paired {
		return apitype.Peer{}, fmt.Errorf("%w: %s", ErrNotPaired, peer)
	}
	view := n.peerView(id)
	if c, err := n.dial(ctx, id, addrs, transport.PurposeLink, nil); err == nil {
		_ = c.Send(transport.Frame{Type: transport.MsgUnpair})
		// Wait for the peer to close: it has saved its paired set by then.
		_, _ = c.Recv()
		_ = c.Close()
	} else {
		n.log.Info("could not tell the other device about unpairing; it will be refused from now on", "peer", id, "err", err)
	}
	n.closeControl(id)
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.paired
	p.Devices = append([]identity.PairedDevice(nil), p.Devices...)
	p.Remove(id)
	if err := identity.SavePaired(n.o.Dir, p); err != nil {
		return apitype.Peer{}, err
	}
	n.paired = p
	view.Paired, view.PairedAt = false, nil
	n.publishLocked(apitype.Event{Kind: "unpaired", Peer: &view})
	n.log.Info("unpaired", "peer", id)
	return view, nil
}
