package agent

import (
	"context"
	"errors"
	"strings"
	"time"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/app/node"
	"homering/app/problem"
	"homering/discovery/identity"
	"homering/engine/ring/transport"
)

// The node's part of the agent, as the API serves it: this device, its
// peers, pairing and contributing (app/node does the work; the agent is
// what the API holds).

// coded is err as the problem a person reads (app/problem): the node's,
// pairing's and the links' errors become codes, so that the API picks an
// HTTP status by the code's Kind and never by a service's sentinel. Its
// sentence is err's text without the packages' prefixes. A problem error
// passes as it is; nil stays nil.
func coded(err error) error {
	if err == nil {
		return nil
	}
	var pe *problem.Error
	if errors.As(err, &pe) {
		return err
	}
	code := problem.PeerFailed
	switch {
	case errors.Is(err, node.ErrUnknownPeer), errors.Is(err, node.ErrNoAddress):
		code = problem.UnknownPeer
	case errors.Is(err, node.ErrNotContributing), errors.Is(err, node.ErrNotPaired), errors.Is(err, node.ErrAmbiguousPeer), errors.Is(err, node.ErrSelf):
		code = problem.PeerState
	case errors.Is(err, identity.ErrCodeFormat), errors.Is(err, identity.ErrCodeTypo):
		code = problem.PairCode
	case errors.Is(err, config.ErrInvalid):
		code = problem.InvalidSettings
	case errors.Is(err, identity.ErrPakeConfirm), errors.Is(err, transport.ErrRefused), errors.Is(err, transport.ErrWrongDevice):
		code = problem.PeerRefused
	}
	return problem.Wrap(code, said(err), err)
}

// said is err's text as one sentence: the packages' prefixes ("node: ")
// dropped, a capital first, a full stop last.
func said(err error) string {
	s := err.Error()
	for _, p := range []string{"node: ", "identity: ", "transport: ", "config: "} {
		s = strings.ReplaceAll(s, p, "")
	}
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// Status is a snapshot of this device: its identity, contributing,
// problems, and the ring job it serves for another head.
func (b *Agent) Status() apitype.Status {
	st := b.node.Status()
	if j := b.sup.Serving(); j != nil {
		st.Serving = servingJob(j, b.node.Peers())
	}
	return st
}

// Peers lists every device seen, plus paired devices not seen now; the
// head this device serves counts as seen.
func (b *Agent) Peers() apitype.Peers { return withServingHead(b.node.Peers(), b.sup.Serving()) }

// Watch subscribes to the node's events until cancel (app/node's Watch).
func (b *Agent) Watch() (events <-chan apitype.Event, cancel func()) { return b.node.Watch() }

// Doctor says what discovery tries and why a device may be invisible.
func (b *Agent) Doctor() apitype.Doctor { return b.node.Doctor() }

// AddPeer adds a device by address (host, host:port or IP), kept in
// config.json.
func (b *Agent) AddPeer(ctx context.Context, addr string) (apitype.Peer, error) {
	p, err := b.node.AddPeer(ctx, addr)
	return p, coded(err)
}

// RemovePeer drops a manual address and the table entry behind it.
func (b *Agent) RemovePeer(peer string) error { return coded(b.node.RemovePeer(peer)) }

// Probe tries a link to peer and says what happened and what might be wrong.
func (b *Agent) Probe(ctx context.Context, peer string) apitype.Probe { return b.node.Probe(ctx, peer) }

// LinkRTT times pings to a paired peer over its control link: the fastest
// round trip.
func (b *Agent) LinkRTT(ctx context.Context, peer identity.DeviceID, pings int) (time.Duration, error) {
	return b.node.LinkRTT(ctx, peer, pings)
}

// PairStatus is the pairing window, if open, and the last result.
func (b *Agent) PairStatus() apitype.PairStatus { return b.node.PairStatus() }

// ShowCode opens a pairing window on this device and returns the code to
// type on the head.
func (b *Agent) ShowCode() (apitype.PairShow, error) {
	p, err := b.node.ShowCode()
	return p, coded(err)
}

// EnterCode pairs with peer (ID, name or address) with the code it shows.
func (b *Agent) EnterCode(ctx context.Context, peer, code string) (apitype.Peer, error) {
	p, err := b.node.EnterCode(ctx, peer, code)
	return p, coded(err)
}

// Unpair forgets peer here and, when it is reachable, there.
func (b *Agent) Unpair(ctx context.Context, peer string) (apitype.Peer, error) {
	p, err := b.node.Unpair(ctx, peer)
	return p, coded(err)
}

// SetContribute shares this machine with paired devices, or stops (a ring
// job kept for this device's next turn ends then: watchContribute).
func (b *Agent) SetContribute(on bool) error { return coded(b.node.SetContribute(on)) }

// SetName renames this device ("": the host name).
func (b *Agent) SetName(name string) error { return coded(b.node.SetName(name)) }
