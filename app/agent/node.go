package agent

import (
	"context"
	"time"

	"homering/app/api/apitype"
	"homering/app/node"
	"homering/discovery/identity"
)

// The node's part of the agent, as the API serves it: this device, its
// peers, pairing and contributing (app/node does the work; the agent is
// what the API holds).

// The errors the node's operations return, for errors.Is: the API picks
// their HTTP statuses.
//
// TODO(issue 15 item 4): services return coded errors (app/problem); then
// these go.
var (
	ErrNotContributing = node.ErrNotContributing
	ErrUnknownPeer     = node.ErrUnknownPeer
	ErrAmbiguousPeer   = node.ErrAmbiguousPeer
	ErrNoAddress       = node.ErrNoAddress
	ErrSelf            = node.ErrSelf
	ErrNotPaired       = node.ErrNotPaired
)

// Status is a snapshot of this device: its identity, contributing, problems.
func (b *Agent) Status() apitype.Status { return b.node.Status() }

// Peers lists every device seen, plus paired devices not seen now.
func (b *Agent) Peers() apitype.Peers { return b.node.Peers() }

// Watch subscribes to the node's events until cancel (app/node's Watch).
func (b *Agent) Watch() (events <-chan apitype.Event, cancel func()) { return b.node.Watch() }

// Doctor says what discovery tries and why a device may be invisible.
func (b *Agent) Doctor() apitype.Doctor { return b.node.Doctor() }

// AddPeer adds a device by address (host, host:port or IP), kept in
// config.json.
func (b *Agent) AddPeer(ctx context.Context, addr string) (apitype.Peer, error) {
	return b.node.AddPeer(ctx, addr)
}

// RemovePeer drops a manual address and the table entry behind it.
func (b *Agent) RemovePeer(peer string) error { return b.node.RemovePeer(peer) }

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
func (b *Agent) ShowCode() (apitype.PairShow, error) { return b.node.ShowCode() }

// EnterCode pairs with peer (ID, name or address) with the code it shows.
func (b *Agent) EnterCode(ctx context.Context, peer, code string) (apitype.Peer, error) {
	return b.node.EnterCode(ctx, peer, code)
}

// Unpair forgets peer here and, when it is reachable, there.
func (b *Agent) Unpair(ctx context.Context, peer string) (apitype.Peer, error) {
	return b.node.Unpair(ctx, peer)
}

// SetContribute shares this machine with paired devices, or stops (a ring
// job kept for this device's next turn ends then: watchContribute).
func (b *Agent) SetContribute(on bool) error { return b.node.SetContribute(on) }

// SetName renames this device ("": the host name).
func (b *Agent) SetName(name string) error { return b.node.SetName(name) }
