package job

import (
	"log/slog"
	"sync"
	"time"

	"homering/discovery/deviceid"
	"homering/engine/ring"
	"homering/engine/ring/wire"
)

// Gaps is a runner process's memory of its peers' silences
// (ring.GapBook) and of how long their windows took (the stall bounds'
// expectations), shared by its head and worker jobs: each new job's
// session starts from what the earlier ones saw. The zero value is empty;
// safe for concurrent use.
type Gaps struct {
	mu     sync.Mutex
	book   ring.GapBook
	expect map[deviceid.ID]ring.Expectation
}

// measured records each worker's times per token and per prompt row as a
// head's job measured them (wire.DeviceStats), so that the next job's
// stall bound starts from them instead of the 60 s it allows a worker
// that has not reported yet.
func (b *Gaps) measured(stats map[deviceid.ID]wire.DeviceStats) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, st := range stats {
		if st.Tokens == 0 {
			continue
		}
		if b.expect == nil {
			b.expect = map[deviceid.ID]ring.Expectation{}
		}
		// All its windows of a token, rounded up: an upper bound of its
		// largest one, as a stall bound wants.
		e := ring.Expectation{DecodeMs: int((st.ComputeUS + 999) / 1000 / uint64(st.Tokens))}
		if st.PromptRows > 0 {
			e.RowMs = int((st.PromptUS + 999) / 1000 / uint64(st.PromptRows))
		}
		b.expect[id] = e
	}
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
	for id, e := range b.expect {
		s.Expect(id, e)
	}
	b.mu.Unlock()
	if len(seeds) > 0 {
		log.Info("ring silence limits start from earlier jobs' gaps", "gap_ticks", seeds)
	}
	return s
}
