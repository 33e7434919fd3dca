package transport

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Reasons a connection or frame from another device is refused. They are
// the keys of Refusals and the words `homering doctor` prints.
const (
	RefusedUnpaired   = "unpaired"           // certificate of a device that is not paired (or no pairing window)
	RefusedNoCert     = "no certificate"     // TLS without a client certificate
	RefusedWrongID    = "wrong ID"           // a certificate whose key the peer does not hold
	RefusedHandshake  = "bad handshake"      // TLS or websocket setup that did not complete
	RefusedHello      = "malformed hello"    // a first frame that is not a valid Hello
	RefusedVersion    = "protocol version"   // no protocol version in common
	RefusedFrameSize  = "oversized frame"    // a length prefix over the limit
	RefusedFrameType  = "unknown frame"      // a frame type the link does not carry
	RefusedPairReplay = "pairing replayed"   // a pairing exchange with no code shown (used up or never opened)
	RefusedPairFailed = "pairing failed"     // a pairing exchange that did not complete (wrong code, broken off)
	RefusedBusy       = "handshake backlog"  // a connection dropped because too many were in setup at once
	RefusedMDNSFlood  = "mDNS flood"         // an announcement past the peer table's bounds (discovery.MaxPeers …)
	RefusedNoPlan     = "plan not installed" // a ring frame of a plan or job this device does not have (engine/ring's Dropped.NoPlan)
)

// Refusals counts refused connections and dropped frames by reason, for
// the agent's status and `homering doctor`. The zero value is ready; it is
// safe for concurrent use.
type Refusals struct {
	mu sync.Mutex
	m  map[string]uint64
}

// Add counts one refusal for reason.
func (r *Refusals) Add(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]uint64{}
	}
	r.m[reason]++
}

// AddCounts adds counts made elsewhere (the engine process's ring links)
// to r's.
func (r *Refusals) AddCounts(m map[string]uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for reason, n := range m {
		if n == 0 {
			continue
		}
		if r.m == nil {
			r.m = map[string]uint64{}
		}
		r.m[reason] += n
	}
}

// Snapshot returns the counts so far; nil when nothing was refused.
func (r *Refusals) Snapshot() map[string]uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.m) == 0 {
		return nil
	}
	out := make(map[string]uint64, len(r.m))
	for k, v := range r.m {
		out[k] = v
	}
	return out
}

// FormatRefusals writes counts as "3 unpaired, 1 wrong ID", the largest
// first (then by name, so the line is stable); "none" when empty.
func FormatRefusals(m map[string]uint64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			if m[a] > m[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", m[k], k)
	}
	return strings.Join(parts, ", ")
}
