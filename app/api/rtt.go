package api

import (
	"context"
	"sync"
	"time"

	"homering/halda"
)

// peerEvery is how often a paired peer's profile and link RTT are asked
// again while a UI is watching (each asks over one link: pings, then the
// profile).
const peerEvery = 30 * time.Second

// peerLook is what one look at a peer found.
type peerLook struct {
	rtt time.Duration
	// profile is the peer's Halda device (nil when it sent none: an agent
	// without an engine, or one too old to answer); measured says whether
	// it is the peer's cached measurement rather than its default.
	profile  *halda.Device
	measured bool
}

// peerCache looks at peers in the background, at most one look per peer in
// flight, and only when asked (while the device map is drawn).
type peerCache struct {
	look func(ctx context.Context, peer string) (peerLook, error)

	mu      sync.Mutex // guards the maps
	last    map[string]peerEntry
	running map[string]bool
}

type peerEntry struct {
	at       time.Time
	rttMs    *float64 // nil when the last look failed
	profile  *halda.Device
	measured bool
}

// get returns the last look at peer (zero if none), starting a new one
// when the last is older than peerEvery. A failed look keeps the profile
// seen before (a profile outlives a dropped link) but forgets the RTT.
func (c *peerCache) get(peer string, now time.Time) peerEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last, c.running = map[string]peerEntry{}, map[string]bool{}
	}
	e, ok := c.last[peer]
	if (!ok || now.Sub(e.at) >= peerEvery) && !c.running[peer] {
		c.running[peer] = true
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			l, err := c.look(ctx, peer)
			c.mu.Lock()
			defer c.mu.Unlock()
			n := c.last[peer]
			n.at, n.rttMs = time.Now(), nil
			if err == nil {
				v := float64(l.rtt) / float64(time.Millisecond)
				n.rttMs = &v
				if l.profile != nil {
					n.profile, n.measured = l.profile, l.measured
				}
			}
			c.last[peer] = n
			delete(c.running, peer)
		}()
	}
	return e
}
