package node

import (
	"context"
	"time"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/engine/ring/transport"
)

// Methods the web UI needs beyond the CLI's.

// SetName renames this device ("" means the host name): a saved config
// change. Peers see the new name at the next advertisement.
func (n *Node) SetName(name string) error {
	n.mu.Lock()
	c := n.cfg
	c.Name = name
	if err := config.Save(n.o.Dir, c); err != nil {
		n.mu.Unlock()
		return err
	}
	n.cfg = c
	n.mu.Unlock()
	n.log.Info("device renamed", "name", name)
	n.publish(apitype.Event{Kind: "renamed"})
	return nil
}

// LinkRTT sets up a link to a paired peer and times pings over it. It
// returns the fastest of pings round trips: the first pays for warm-up, and
// the minimum is the least disturbed by the rest of the machine.
func (n *Node) LinkRTT(ctx context.Context, peer string, pings int) (time.Duration, error) {
	id, addrs, err := n.resolve(peer)
	if err != nil {
		return 0, err
	}
	c, err := n.dial(ctx, id, addrs, transport.PurposeLink, nil)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	return n.pings(c, max(pings, 1), []byte("rtt"))
}
