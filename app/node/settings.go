package node

import (
	"homering/app/api/apitype"
	"homering/app/config"
)

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
