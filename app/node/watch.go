package node

import (
	"homering/app/api/apitype"
	"homering/discovery"
)

// Watch subscribes to events. The channel is buffered; a subscriber that
// falls behind by more than its buffer loses events rather than stalling the
// node (a UI re-reads Status and Peers after a gap). cancel ends the
// subscription and closes the channel.
func (n *Node) Watch() (events <-chan apitype.Event, cancel func()) {
	ch := make(chan apitype.Event, 64)
	n.mu.Lock()
	if n.watchers == nil {
		n.watchers = map[chan apitype.Event]struct{}{}
	}
	n.watchers[ch] = struct{}{}
	n.mu.Unlock()
	return ch, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		if _, ok := n.watchers[ch]; ok {
			delete(n.watchers, ch)
			close(ch)
		}
	}
}

// publishLocked sends e to every watcher; n.mu must be held.
func (n *Node) publishLocked(e apitype.Event) {
	if e.At.IsZero() {
		e.At = n.o.Now()
	}
	for ch := range n.watchers {
		select {
		case ch <- e:
		default:
		}
	}
}

func (n *Node) publish(e apitype.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.publishLocked(e)
}

func eventKind(e discovery.Event) string {
	switch {
	case e.Kind == discovery.Conflict && e.Self:
		return "self_copy"
	case e.Kind == discovery.Conflict:
		return "peer_conflict"
	}
	return "peer_" + e.Kind.String()
}
