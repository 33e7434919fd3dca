package job

import (
	"log/slog"
	"sync"
	"time"

	"homering/discovery/deviceid"
	"homering/engine/ring"
)

// Gaps is a runner process's memory of its peers' silences
// (ring.GapBook), shared by its head and worker jobs: each new job's
// session starts from what the earlier ones saw. The zero value is empty;
// safe for concurrent use.
type Gaps struct {
	mu   sync.Mutex
	book ring.GapBook
}

// record adds what a job's session saw as of now, when the job ended.
func (b *Gaps) record(now time.Time, tick time.Duration, gaps map[deviceid.ID][]ring.Gap) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.book.Record(now, tick, gaps)
}

// session is a new job's ring session for device self ticking every tick,
// its silence limits seeded with what earlier jobs of this process saw.
func (b *Gaps) session(self deviceid.ID, tick time.Duration, log *slog.Logger) *ring.Session {
	s := ring.New(self, int(tick/time.Millisecond))
	b.mu.Lock()
	seeds := b.book.Seed(s, time.Now(), tick)
	b.mu.Unlock()
	if len(seeds) > 0 {
		log.Info("ring silence limits start from earlier jobs' gaps", "gap_ticks", seeds)
	}
	return s
}
