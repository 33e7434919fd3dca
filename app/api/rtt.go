package api

import (
	"context"
	"sync"
	"time"

	"homering/app/api/apitype"
	"homering/discovery/deviceid"
	"homering/halda"
)

// peerEvery is how often a paired peer's profile and link RTT are asked
// again while a UI is watching (each asks over one link: pings, then the
// profile, whose RAM figures the peer reads fresh for every answer). It is
// also the resolution of a peer's memory-pressure history.
const peerEvery = 10 * time.Second

// peerMemKeep is how many memory readings of a peer are kept (10 minutes).
const peerMemKeep = 60

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
	look func(ctx context.Context, peer deviceid.ID) (peerLook, error)

	mu      sync.Mutex // guards the maps
	last    map[deviceid.ID]peerEntry
	running map[deviceid.ID]bool
}

type peerEntry struct {
	at       time.Time
	rttMs    *float64 // nil when the last look failed
	profile  *halda.Device
	measured bool
	memory   []apitype.MemSample // oldest first
	memBase  int64               // the peer's first MemAvailable seen: pressure is measured from it
}

// get returns the last look at peer (zero if none), starting a new one
// when the last is older than peerEvery. A failed look keeps the profile
// seen before (a profile outlives a dropped link) but forgets the RTT.
func (c *peerCache) get(peer deviceid.ID, now time.Time) peerEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last, c.running = map[deviceid.ID]peerEntry{}, map[deviceid.ID]bool{}
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
					if n.memBase == 0 {
						n.memBase = l.profile.RAMAvailable
					}
					if l.profile.RAMTotal > 0 {
						n.memory = addMemSampleFrom(n.memory, n.memBase, n.at, l.profile.RAMAvailable, l.profile.RAMTotal, peerMemKeep)
					}
				}
			}
			c.last[peer] = n
			delete(c.running, peer)
		}()
	}
	e.memory = append([]apitype.MemSample(nil), e.memory...) // the caller may keep it past the lock
	return e
}
