package ring

import (
	"slices"
	"time"

	"homering/discovery/deviceid"
)

// Silence history across jobs (see Silence in the package doc): a job's
// session learns how long each peer goes quiet and comes back, but a new
// job's session would start knowing nothing, so a peer that goes quiet under
// load (a worker starved at its low priority, a head paging under its
// memory cap) would be taken for lost at its first silence in every new
// job. A process keeps what its jobs saw (GapBook) and seeds each new job's
// session with it. Time comes in as arguments.

// GapMemory is how long a silence a peer ended is carried to later jobs;
// GapsKept is how many of each peer's newest are.
const (
	GapMemory = 5 * time.Minute
	GapsKept  = 8
)

// GapBook is a memory of peers' silences across jobs. The zero value is
// empty. Not safe for concurrent use: the runner guards it.
type GapBook struct {
	gaps map[deviceid.ID][]pastGap // per peer, oldest first
}

// pastGap is a silence a peer ended: when, and how long it lasted.
type pastGap struct {
	ended time.Time
	ms    int
}

// Record adds what a job's session saw (Session.Gaps, in ticks of tick) as
// of now, when the job ended.
func (b *GapBook) Record(now time.Time, tick time.Duration, gaps map[deviceid.ID][]Gap) {
	if b.gaps == nil {
		b.gaps = map[deviceid.ID][]pastGap{}
	}
	for id, gs := range gaps {
		for _, g := range gs {
			b.gaps[id] = append(b.gaps[id], pastGap{ended: now.Add(-time.Duration(g.Age) * tick), ms: g.Ticks * int(tick/time.Millisecond)})
		}
		// A head job and a worker job of one process may both report.
		slices.SortStableFunc(b.gaps[id], func(x, y pastGap) int { return x.ended.Compare(y.ended) })
	}
	b.prune(now)
}

// prune forgets gaps older than GapMemory and all but each peer's GapsKept
// newest.
func (b *GapBook) prune(now time.Time) {
	for id, gs := range b.gaps {
		gs = slices.DeleteFunc(gs, func(g pastGap) bool { return now.Sub(g.ended) > GapMemory })
		if len(gs) > GapsKept {
			gs = gs[len(gs)-GapsKept:]
		}
		if len(gs) == 0 {
			delete(b.gaps, id)
			continue
		}
		b.gaps[id] = gs
	}
}

// Seed gives s, a new job's session ticking every tick, the silences its
// peers ended within GapMemory of now, in whole ticks (rounded up), and
// returns the largest per peer (for the log).
func (b *GapBook) Seed(s *Session, now time.Time, tick time.Duration) map[deviceid.ID]int {
	b.prune(now)
	tickMs := int(tick / time.Millisecond)
	if tickMs <= 0 {
		return nil
	}
	out := map[deviceid.ID]int{}
	for id, gs := range b.gaps {
		for _, g := range gs {
			n := (g.ms + tickMs - 1) / tickMs
			s.Seed(id, n)
			out[id] = max(out[id], n)
		}
	}
	return out
}
