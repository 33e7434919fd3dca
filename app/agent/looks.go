package agent

import (
	"context"
	"sync"
	"time"

	"homering/app/api/apitype"
	"homering/discovery/deviceid"
	"homering/engine/profile/sysinfo"
	"homering/halda"
)

// What the device map shows of each device besides the plan: this
// device's memory history and each peer's link time and memory, looked at
// only while a UI asks (the device map's reads drive them).

// looks holds the device map's samplers; made on first use.
type looks struct {
	once  sync.Once
	mem   *memSampler
	peers *peerCache
}

func (b *Agent) looks() *looks {
	b.look.once.Do(func() {
		b.look.mem = newMemSampler(readMeminfo, 120)
		b.look.peers = &peerCache{look: b.lookAtPeer}
	})
	return &b.look
}

// Memory is this device's memory history, oldest first, with a reading
// taken now when the last is older than a second.
func (b *Agent) Memory(now time.Time) []apitype.MemSample { return b.looks().mem.sample(now) }

// PeerLook is the last look at a peer (zero At: none yet).
type PeerLook struct {
	At     time.Time
	RTTMs  *float64            // nil when the last look failed
	Memory []apitype.MemSample // oldest first
}

// LookAtPeer returns the last look at peer, starting a new one in the
// background when it is older than peerEvery; the planner's peer table
// takes what the look finds.
func (b *Agent) LookAtPeer(peer deviceid.ID, now time.Time) PeerLook {
	return b.looks().peers.get(peer, now).PeerLook
}

// lookAtPeer is one look: the planner's (its background one when fresh),
// whose answer is what the next plan uses.
func (b *Agent) lookAtPeer(ctx context.Context, peer deviceid.ID) (peerLook, error) {
	p, ok := b.Planner().LastLook(peer)
	var err error
	if !ok {
		p, err = b.Planner().Look(ctx, peer)
	}
	if err == nil {
		return peerLook{rtt: p.RTT, profile: &p.Device, measured: p.Measured}, nil
	}
	// A peer that runs no engine (or predates profiles) still has a link
	// worth timing.
	d, rerr := b.LinkRTT(ctx, peer, 5)
	return peerLook{rtt: d}, rerr
}

// memSampler keeps a short history of this device's memory. Sampling is
// driven by readers (the live stream, the plan), at most once a second, so
// nothing runs while no UI is open. Pressure is ΔMemAvailable/MemTotal from
// the first reading of the run, which stays the baseline after it scrolls
// out of the history.
type memSampler struct {
	read func() (avail, total int64, err error)
	keep int

	mu   sync.Mutex // guards hist and base
	hist []apitype.MemSample
	base int64 // MemAvailable of the first reading: pressure is measured from it
}

func newMemSampler(read func() (int64, int64, error), keep int) *memSampler {
	return &memSampler{read: read, keep: keep}
}

// sample takes a reading if the last is older than a second, and returns
// the history, oldest first.
func (m *memSampler) sample(now time.Time) []apitype.MemSample {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.hist); n == 0 || now.Sub(m.hist[n-1].At) >= time.Second {
		if avail, total, err := m.read(); err == nil && total > 0 {
			if m.base == 0 {
				m.base = avail
			}
			m.hist = addMemSampleFrom(m.hist, m.base, now, avail, total, m.keep)
		}
	}
	return append([]apitype.MemSample(nil), m.hist...)
}

// addMemSampleFrom appends a reading whose pressure is measured from base
// (MemAvailable before the run), clamped to [0,1].
func addMemSampleFrom(hist []apitype.MemSample, base int64, now time.Time, avail, total int64, keep int) []apitype.MemSample {
	s := apitype.MemSample{At: now, Available: avail, Total: total,
		Pressure: min(max(float64(base-avail)/float64(total), 0), 1)}
	hist = append(hist, s)
	if len(hist) > keep {
		hist = hist[len(hist)-keep:]
	}
	return hist
}

// readMeminfo reads this device's available and total memory through the
// one cross-OS reader (engine/profile/sysinfo: /proc/meminfo on Linux,
// GlobalMemoryStatusEx on Windows, the VM counters on macOS).
func readMeminfo() (avail, total int64, err error) {
	m, err := sysinfo.ReadMemory()
	if err != nil {
		return 0, 0, err
	}
	return m.Available, m.Total, nil
}

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
	PeerLook
	profile  *halda.Device
	measured bool
	memBase  int64 // the peer's first MemAvailable seen: pressure is measured from it
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
	if (!ok || now.Sub(e.At) >= peerEvery) && !c.running[peer] {
		c.running[peer] = true
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			l, err := c.look(ctx, peer)
			c.mu.Lock()
			defer c.mu.Unlock()
			n := c.last[peer]
			n.At, n.RTTMs = time.Now(), nil
			if err == nil {
				v := float64(l.rtt) / float64(time.Millisecond)
				n.RTTMs = &v
				if l.profile != nil {
					n.profile, n.measured = l.profile, l.measured
					if n.memBase == 0 {
						n.memBase = l.profile.RAMAvailable
					}
					if l.profile.RAMTotal > 0 {
						n.Memory = addMemSampleFrom(n.Memory, n.memBase, n.At, l.profile.RAMAvailable, l.profile.RAMTotal, peerMemKeep)
					}
				}
			}
			c.last[peer] = n
			delete(c.running, peer)
		}()
	}
	e.Memory = append([]apitype.MemSample(nil), e.Memory...) // the caller may keep it past the lock
	return e
}
