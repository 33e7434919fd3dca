package runner

import (
	"log/slog"
	"slices"
	"sync"
	"time"

	"homering/engine/ring"
)

// Silence history across jobs (engine/ring's doc, "Silence"): a job's
// session learns how long each peer goes quiet and comes back, but a new
// job's session would start knowing nothing, so a peer that goes quiet under
// load (a worker starved at its low priority, a head paging under its
// memory cap) would be taken for lost at its first silence in every new
// job. The runner process keeps what its jobs saw (gapBook) and seeds each
// new job's session with it.

// gapMemory is how long a silence a peer ended is carried to later jobs;
// gapsKept is how many of each peer's newest are.
const (
	gapMemory = 5 * time.Minute
	gapsKept  = 8
)

// gapBook is a runner process's memory of its peers' silences, shared by
// its head and worker jobs. The zero value is empty; safe for concurrent
// use.
type gapBook struct {
	mu   sync.Mutex
	gaps map[string][]pastGap // per peer, oldest first
}

// pastGap is a silence a peer ended: when, and how long it lasted.
type pastGap struct {
	ended time.Time
	ms    int
}

// record adds what a job's session saw (ring.Session.Gaps, in ticks of
// tick) as of now, when the job ended.
func (b *gapBook) record(now time.Time, tick time.Duration, gaps map[string][]ring.Gap) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gaps == nil {
		b.gaps = map[string][]pastGap{}
	}
	for id, gs := range gaps {
		for _, g := range gs {
			b.gaps[id] = append(b.gaps[id], pastGap{ended: now.Add(-time.Duration(g.Age) * tick), ms: g.Ticks * int(tick/time.Millisecond)})
		}
		// A head job and a worker job of this process may both report.
		slices.SortStableFunc(b.gaps[id], func(x, y pastGap) int { return x.ended.Compare(y.ended) })
	}
	b.prune(now)
}

// prune forgets gaps older than gapMemory and all but each peer's gapsKept
// newest; b.mu held.
func (b *gapBook) prune(now time.Time) {
	for id, gs := range b.gaps {
		gs = slices.DeleteFunc(gs, func(g pastGap) bool { return now.Sub(g.ended) > gapMemory })
		if len(gs) > gapsKept {
			gs = gs[len(gs)-gapsKept:]
		}
		if len(gs) == 0 {
			delete(b.gaps, id)
			continue
		}
		b.gaps[id] = gs
	}
}

// seed gives s, a new job's session ticking every tick, the silences its
// peers ended within gapMemory of now, in whole ticks (rounded up), and
// returns the largest per peer (for the log).
func (b *gapBook) seed(s *ring.Session, now time.Time, tick time.Duration) map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.prune(now)
	tickMs := int(tick / time.Millisecond)
	if tickMs <= 0 {
		return nil
	}
	out := map[string]int{}
	for id, gs := range b.gaps {
		for _, g := range gs {
			n := (g.ms + tickMs - 1) / tickMs
			s.Seed(id, n)
			out[id] = max(out[id], n)
		}
	}
	return out
}

// session is a new job's ring session for device self ticking every tick,
// its silence limits seeded with what earlier jobs of this process saw.
func (b *gapBook) session(self string, tick time.Duration, log *slog.Logger) *ring.Session {
	s := ring.New(self, int(tick/time.Millisecond))
	if seeds := b.seed(s, time.Now(), tick); len(seeds) > 0 {
		log.Info("ring silence limits start from earlier jobs' gaps", "gap_ticks", seeds)
	}
	return s
}
