package api

import (
	"context"
	"sync"
	"time"
)

// rttEvery is how often a paired peer's link RTT is measured again while
// a UI is watching (each measurement sets up one link and pings 5 times).
const rttEvery = 30 * time.Second

// rttCache measures link RTTs in the background, at most one measurement
// per peer in flight, and only when asked (while the device map is drawn).
type rttCache struct {
	measure func(ctx context.Context, peer string) (time.Duration, error)

	mu      sync.Mutex // guards the maps
	last    map[string]rttEntry
	running map[string]bool
}

type rttEntry struct {
	at time.Time
	ms *float64 // nil when the last try failed
}

// get returns the last RTT of peer in ms (nil if none), starting a new
// measurement when the last is older than rttEvery.
func (c *rttCache) get(peer string, now time.Time) *float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last, c.running = map[string]rttEntry{}, map[string]bool{}
	}
	e, ok := c.last[peer]
	if (!ok || now.Sub(e.at) >= rttEvery) && !c.running[peer] {
		c.running[peer] = true
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			d, err := c.measure(ctx, peer)
			var ms *float64
			if err == nil {
				v := float64(d) / float64(time.Millisecond)
				ms = &v
			}
			c.mu.Lock()
			c.last[peer] = rttEntry{at: time.Now(), ms: ms}
			delete(c.running, peer)
			c.mu.Unlock()
		}()
	}
	return e.ms
}
