package node

import (
	"context"
	"time"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/discovery/identity"
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

// LinkRTT times pings to a paired peer over its control link (ring.go
// control) and returns the fastest of pings round trips.
func (n *Node) LinkRTT(ctx context.Context, peer identity.DeviceID, pings int) (time.Duration, error) {
	var d time.Duration
	err := n.control(ctx, peer, func(c *transport.Conn) error {
		var err error
		d, err = n.pings(c, max(pings, 1), []byte("rtt"))
		return err
	})
	return d, err
}
