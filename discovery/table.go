package discovery

import (
	"cmp"
	"net/netip"
	"slices"
	"time"

	"homering/discovery/identity"
)

// Source says how a device was found. Values are stable (shown in the API).
type Source uint8

const (
	SourceMDNS   Source = 1
	SourceManual Source = 2
)

func (s Source) String() string {
	switch s {
	case SourceMDNS:
		return "mdns"
	case SourceManual:
		return "manual"
	}
	return "unknown"
}

// Sighting is one report of a device: an mDNS answer or a manual add.
type Sighting struct {
	Record Record
	Source Source
	Iface  string           // local interface it was seen on; "" if unknown
	Addrs  []netip.AddrPort // where it can be reached
	TTL    time.Duration    // mDNS record TTL; ignored for manual sightings
}

// Peer is the merged view of one device.
type Peer struct {
	Record    Record // from the most recently seen instance
	Sources   []Source
	Ifaces    []string
	Addrs     []netip.AddrPort
	FirstSeen time.Time
	LastSeen  time.Time
	Expires   time.Time // zero when a manual instance keeps it
	Conflict  bool      // two live processes claim this device ID
	Runs      int       // live mDNS runs seen for this ID
}

// EventKind values are stable.
type EventKind uint8

const (
	Joined   EventKind = 1
	Updated  EventKind = 2
	Left     EventKind = 3
	Conflict EventKind = 4
)

func (k EventKind) String() string {
	return [...]string{"?", "joined", "updated", "left", "conflict"}[min(int(k), 4)]
}

// Event is a change of the table. Self is set for a conflict on this device's own ID.
type Event struct {
	Kind   EventKind
	Peer   Peer
	Self   bool
	Reason string
}

type instKey struct {
	src Source
	run string
}

type instance struct {
	rec       Record
	iface     string
	addrs     []netip.AddrPort
	firstSeen time.Time
	lastSeen  time.Time
	expires   time.Time // zero: never
	seenAgain bool      // seen after its first sighting
}

type entry struct {
	inst     map[instKey]*instance
	conflict bool
}

// Table is the peer table. It is not safe for concurrent use; the caller
// (app/node) serialises access.
type Table struct {
	self    identity.DeviceID
	selfRun string
	peers   map[identity.DeviceID]*entry
	clones  map[string]*instance // other runs of our own ID, by run
	cloneOn bool                 // a self conflict has been reported
	flooded uint64               // mDNS sightings dropped or pushed out by the caps
}

// The table's bounds against a flood of mDNS announcements (a stranger on
// the network inventing device IDs, runs or addresses): a home has a few
// devices with a few addresses each, so these are far above any real one.
// At a bound the table keeps what was seen more than once (a device that
// lives re-announces) and lets a one-off announcement go: the new one, or
// the oldest one-off to make room for it. Manual entries are never pushed
// out.
const (
	MaxPeers = 256 // devices
	MaxRuns  = 8   // mDNS runs (process starts) of one device, or of this one's ID
	MaxAddrs = 16  // addresses of one instance
)

// NewTable makes an empty table for the device self running as selfRun.
func NewTable(self identity.DeviceID, selfRun string) *Table {
	return &Table{self: self, selfRun: selfRun, peers: map[identity.DeviceID]*entry{}, clones: map[string]*instance{}}
}

// minTTL and maxTTL clamp what a peer claims: a zero or tiny TTL would make it
// flap, a huge one would keep a dead device listed for hours.
const (
	minTTL = time.Second
	maxTTL = time.Hour
)

// Observe records a sighting at now and returns the events it causes.
func (t *Table) Observe(s Sighting, now time.Time) []Event {
	id := s.Record.ID
	if id.IsZero() {
		return nil
	}
	if id == t.self {
		return t.observeSelf(s, now)
	}
	e := t.peers[id]
	var before *Peer
	var evs []Event
	if e == nil {
		if len(t.peers) >= MaxPeers {
			if s.Source != SourceMDNS {
				// A person's manual add makes room; with none to push
				// out it still enters (one more than the bound).
				evs = append(evs, t.evictOneOff()...)
			} else if evs = t.evictOneOff(); evs == nil {
				t.flooded++
				return nil
			}
		}
		e = &entry{inst: map[instKey]*instance{}}
		t.peers[id] = e
	} else {
		p := e.view(id)
		before = &p
	}
	k := instKey{s.Source, s.Record.Run}
	if s.Source == SourceManual {
		k.run = "" // one manual instance per device, whatever it said
	}
	in := e.inst[k]
	if in == nil {
		if k.src == SourceMDNS && len(e.inst) >= MaxRuns && !dropOneOff(e.inst) {
			t.flooded++
			if before == nil {
				delete(t.peers, id)
			}
			return evs
		}
		in = &instance{firstSeen: now}
		e.inst[k] = in
	} else if now.After(in.firstSeen) {
		in.seenAgain = true
	}
	in.rec, in.iface, in.lastSeen = s.Record, s.Iface, now
	in.addrs = t.capAddrs(mergeAddrs(in.addrs, s.Addrs), s.Addrs)
	if s.Source == SourceMDNS {
		in.expires = now.Add(min(max(s.TTL, minTTL), maxTTL))
	}
	after := e.view(id)
	switch {
	case before == nil:
		evs = append(evs, Event{Kind: Joined, Peer: after, Reason: "seen by " + s.Source.String()})
	case changed(*before, after):
		evs = append(evs, Event{Kind: Updated, Peer: after})
	}
	if !e.conflict && e.hasConflict() {
		e.conflict = true
		after = e.view(id)
		evs = append(evs, Event{Kind: Conflict, Peer: after, Reason: "two running devices share this device ID (a copied config directory?)"})
	}
	return evs
}

func (t *Table) observeSelf(s Sighting, now time.Time) []Event {
	if s.Source != SourceMDNS || s.Record.Run == t.selfRun || s.Record.Run == "" {
		return nil
	}
	in := t.clones[s.Record.Run]
	if in == nil {
		if len(t.clones) >= MaxRuns && !dropOneOff(t.clones) {
			t.flooded++
			return nil
		}
		in = &instance{firstSeen: now}
		t.clones[s.Record.Run] = in
	} else if now.After(in.firstSeen) {
		in.seenAgain = true
	}
	in.rec, in.iface, in.lastSeen = s.Record, s.Iface, now
	in.addrs = t.capAddrs(mergeAddrs(in.addrs, s.Addrs), s.Addrs)
	in.expires = now.Add(min(max(s.TTL, minTTL), maxTTL))
	// We are alive throughout, so a second sighting of another run proves a
	// live copy; one stray packet from our own previous run does not.
	if !t.cloneOn && in.seenAgain {
		t.cloneOn = true
		return []Event{{Kind: Conflict, Self: true, Peer: instView(t.self, in), Reason: "another device runs with this device's identity (a copied config directory?)"}}
	}
	return nil
}

// Flooded is how many mDNS sightings the table's bounds dropped or pushed
// out so far (the flood refusals `homering doctor` counts).
func (t *Table) Flooded() uint64 { return t.flooded }

// evictOneOff removes the device seen longest ago of those only ever seen
// in one mDNS announcement, making room for another; nil when every device
// was seen again or added by hand.
func (t *Table) evictOneOff() []Event {
	var victim identity.DeviceID
	var first time.Time
	found := false
	for _, id := range t.ids() {
		e := t.peers[id]
		one := len(e.inst) == 1
		for k, in := range e.inst {
			one = one && k.src == SourceMDNS && !in.seenAgain
			if one && (!found || in.firstSeen.Before(first)) {
				victim, first, found = id, in.firstSeen, true
			}
		}
	}
	if !found {
		return nil
	}
	t.flooded++
	p := t.peers[victim].view(victim)
	delete(t.peers, victim)
	return []Event{{Kind: Left, Peer: p, Reason: "pushed out by a flood of announcements"}}
}

// dropOneOff removes from m the mDNS instance seen longest ago of those
// seen only once, and says whether there was one.
func dropOneOff[K comparable](m map[K]*instance) bool {
	var victim K
	var first time.Time
	found := false
	for k, in := range m {
		if in.expires.IsZero() || in.seenAgain {
			continue
		}
		if !found || in.firstSeen.Before(first) {
			victim, first, found = k, in.firstSeen, true
		}
	}
	if found {
		delete(m, victim)
	}
	return found
}

// capAddrs bounds an instance's merged addresses: past MaxAddrs it keeps
// the latest sighting's own (an mDNS answer carries all of a device's).
func (t *Table) capAddrs(merged, latest []netip.AddrPort) []netip.AddrPort {
	if len(merged) <= MaxAddrs {
		return merged
	}
	t.flooded++
	out := mergeAddrs(nil, latest)
	return out[:min(len(out), MaxAddrs)]
}

// SelfConflict returns the live copies of this device, if any.
func (t *Table) SelfConflict() []Peer {
	var out []Peer
	for _, in := range t.clones {
		if in.seenAgain {
			out = append(out, instView(t.self, in))
		}
	}
	slices.SortFunc(out, func(a, b Peer) int { return cmp.Compare(a.Record.Run, b.Record.Run) })
	return out
}

// Goodbye removes the mDNS instance (id, run) at once, as an mDNS TTL-0
// record asks, and returns the events.
func (t *Table) Goodbye(id identity.DeviceID, run string, now time.Time) []Event {
	if id == t.self {
		delete(t.clones, run)
		t.cloneOn = len(t.SelfConflict()) > 0
		return nil
	}
	e := t.peers[id]
	if e == nil {
		return nil
	}
	if _, ok := e.inst[instKey{SourceMDNS, run}]; !ok {
		return nil
	}
	before := e.view(id)
	delete(e.inst, instKey{SourceMDNS, run})
	return t.settle(id, e, before, "said goodbye")
}

// Remove drops a device entirely (the user removed a manual entry).
func (t *Table) Remove(id identity.DeviceID) []Event {
	e := t.peers[id]
	if e == nil {
		return nil
	}
	p := e.view(id)
	delete(t.peers, id)
	return []Event{{Kind: Left, Peer: p, Reason: "removed"}}
}

// Expire drops instances whose TTL has passed by now.
func (t *Table) Expire(now time.Time) []Event {
	for run, in := range t.clones {
		if !in.expires.After(now) {
			delete(t.clones, run)
		}
	}
	t.cloneOn = len(t.SelfConflict()) > 0
	var evs []Event
	for _, id := range t.ids() {
		e := t.peers[id]
		before := e.view(id)
		gone := false
		for k, in := range e.inst {
			if !in.expires.IsZero() && !in.expires.After(now) {
				delete(e.inst, k)
				gone = true
			}
		}
		if gone {
			evs = append(evs, t.settle(id, e, before, "not seen within its TTL")...)
		}
	}
	return evs
}

// NextExpiry is the earliest time Expire would change something, or zero.
func (t *Table) NextExpiry() time.Time {
	var next time.Time
	for _, e := range t.peers {
		for _, in := range e.inst {
			if !in.expires.IsZero() && (next.IsZero() || in.expires.Before(next)) {
				next = in.expires
			}
		}
	}
	return next
}

// settle emits Left or Updated after instances were removed from e.
func (t *Table) settle(id identity.DeviceID, e *entry, before Peer, reason string) []Event {
	if len(e.inst) == 0 {
		delete(t.peers, id)
		return []Event{{Kind: Left, Peer: before, Reason: reason}}
	}
	e.conflict = e.hasConflict()
	if after := e.view(id); changed(before, after) || before.Conflict != after.Conflict {
		return []Event{{Kind: Updated, Peer: after, Reason: reason}}
	}
	return nil
}

// Peers returns every device, sorted by name then ID.
func (t *Table) Peers() []Peer {
	out := make([]Peer, 0, len(t.peers))
	for _, id := range t.ids() {
		out = append(out, t.peers[id].view(id))
	}
	slices.SortStableFunc(out, func(a, b Peer) int { return cmp.Compare(a.Record.Name, b.Record.Name) })
	return out
}

// Get returns one device.
func (t *Table) Get(id identity.DeviceID) (Peer, bool) {
	e := t.peers[id]
	if e == nil {
		return Peer{}, false
	}
	return e.view(id), true
}

func (t *Table) ids() []identity.DeviceID {
	ids := make([]identity.DeviceID, 0, len(t.peers))
	for id := range t.peers {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b identity.DeviceID) int { return slices.Compare(a[:], b[:]) })
	return ids
}

func (e *entry) hasConflict() bool {
	var runs []*instance
	for k, in := range e.inst {
		if k.src == SourceMDNS && k.run != "" {
			runs = append(runs, in)
		}
	}
	for i, a := range runs {
		for _, b := range runs[i+1:] {
			// Each seen after the other first appeared: both alive at once.
			if a.lastSeen.After(b.firstSeen) && b.lastSeen.After(a.firstSeen) {
				return true
			}
		}
	}
	return false
}

func (e *entry) view(id identity.DeviceID) Peer {
	keys := make([]instKey, 0, len(e.inst))
	for k := range e.inst {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b instKey) int {
		return cmp.Or(cmp.Compare(a.src, b.src), cmp.Compare(a.run, b.run))
	})
	var p Peer
	var newest *instance
	manual := false
	for _, k := range keys {
		in := e.inst[k]
		if !slices.Contains(p.Sources, k.src) {
			p.Sources = append(p.Sources, k.src)
		}
		if in.iface != "" && !slices.Contains(p.Ifaces, in.iface) {
			p.Ifaces = append(p.Ifaces, in.iface)
		}
		p.Addrs = mergeAddrs(p.Addrs, in.addrs)
		if p.FirstSeen.IsZero() || in.firstSeen.Before(p.FirstSeen) {
			p.FirstSeen = in.firstSeen
		}
		if in.lastSeen.After(p.LastSeen) {
			p.LastSeen = in.lastSeen
		}
		if in.expires.IsZero() {
			manual = true
		} else if in.expires.After(p.Expires) {
			p.Expires = in.expires
		}
		// Prefer what the device says about itself (mDNS) over a manual stub.
		if newest == nil || (k.src == SourceMDNS && (newest.rec.Run == "" || in.lastSeen.After(newest.lastSeen))) {
			newest = in
		}
		if k.src == SourceMDNS && k.run != "" {
			p.Runs++
		}
	}
	if manual {
		p.Expires = time.Time{}
	}
	if newest != nil {
		p.Record = newest.rec
	}
	p.Record.ID = id
	slices.Sort(p.Ifaces)
	p.Conflict = e.conflict
	return p
}

func instView(id identity.DeviceID, in *instance) Peer {
	p := Peer{Record: in.rec, Sources: []Source{SourceMDNS}, Addrs: in.addrs, FirstSeen: in.firstSeen, LastSeen: in.lastSeen, Expires: in.expires, Conflict: true, Runs: 1}
	p.Record.ID = id
	if in.iface != "" {
		p.Ifaces = []string{in.iface}
	}
	return p
}

// changed compares what a user would see, ignoring times.
func changed(a, b Peer) bool {
	a.Record.Run, b.Record.Run = "", "" // which run spoke last is not news
	return a.Record != b.Record || !slices.Equal(a.Sources, b.Sources) ||
		!slices.Equal(a.Ifaces, b.Ifaces) || !slices.Equal(a.Addrs, b.Addrs)
}

func mergeAddrs(have, add []netip.AddrPort) []netip.AddrPort {
	out := slices.Clone(have)
	for _, a := range add {
		if a.IsValid() && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b netip.AddrPort) int { return a.Compare(b) })
	return out
}
