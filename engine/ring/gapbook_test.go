package ring

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/engine/ring/wire"
)

// What a process carries from one ring job to the next: the
// silences its peers ended, bounded in age and count, converted to the next
// job's ticks.
func TestGapBook(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	const tick = 500 * time.Millisecond
	type job struct {
		at   time.Time // when it ended
		tick time.Duration
		gaps map[string][]Gap
	}
	tests := []struct {
		name string
		jobs []job
		at   time.Time // when the next job starts
		tick time.Duration
		want map[string]int // the largest seed per peer
	}{
		{"nothing learned", nil, t0, tick, map[string]int{}},
		{"a gap of the last job", []job{{t0, tick, map[string][]Gap{"w": {{Ticks: 3, Age: 10}}}}}, t0.Add(time.Minute), tick, map[string]int{"w": 3}},
		{"the largest of several, per peer", []job{{t0, tick, map[string][]Gap{"w": {{Ticks: 2, Age: 40}, {Ticks: 5, Age: 4}}, "v": {{Ticks: 2, Age: 1}}}}},
			t0, tick, map[string]int{"w": 5, "v": 2}},
		{"from several jobs", []job{{t0, tick, map[string][]Gap{"w": {{Ticks: 4, Age: 0}}}}, {t0.Add(time.Minute), tick, map[string][]Gap{"w": {{Ticks: 2, Age: 0}}}}},
			t0.Add(2 * time.Minute), tick, map[string]int{"w": 4}},
		{"older than 5 minutes: forgotten", []job{{t0, tick, map[string][]Gap{"w": {{Ticks: 4, Age: 0}}}}, {t0.Add(time.Minute), tick, map[string][]Gap{"w": {{Ticks: 2, Age: 0}}}}},
			t0.Add(5*time.Minute + time.Second), tick, map[string]int{"w": 2}},
		{"age counts from when the gap ended, not the job", []job{{t0, tick, map[string][]Gap{"w": {{Ticks: 4, Age: 120}}}}},
			t0.Add(5*time.Minute - 30*time.Second), tick, map[string]int{}},
		{"only the 8 newest per peer", []job{{t0, tick, map[string][]Gap{"w": {{Ticks: 9, Age: 20}, {Ticks: 2, Age: 9}, {Ticks: 2, Age: 8}, {Ticks: 2, Age: 7},
			{Ticks: 2, Age: 6}, {Ticks: 2, Age: 5}, {Ticks: 2, Age: 4}, {Ticks: 2, Age: 3}, {Ticks: 2, Age: 2}}}}}, t0, tick, map[string]int{"w": 2}},
		{"another tick: the same time, rounded up", []job{{t0, tick, map[string][]Gap{"w": {{Ticks: 3, Age: 0}}}}}, t0, time.Second, map[string]int{"w": 2}},
		{"a shorter tick: more ticks", []job{{t0, time.Second, map[string][]Gap{"w": {{Ticks: 2, Age: 0}}}}}, t0, tick, map[string]int{"w": 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b GapBook
			for _, j := range tt.jobs {
				b.Record(j.at, j.tick, byID(j.gaps))
			}
			s := New(tid("h"), int(tt.tick/time.Millisecond))
			got := byName(b.Seed(s, tt.at, tt.tick))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("seeds (-want +got)\n%s", diff)
			}
			// The session took them: a worker's silence limit is twice its
			// seed (at least 3 ticks, at most 12).
			for id, n := range tt.want {
				if limit := silenceLimit(t, s, id); limit != SilenceTicks(int(tt.tick/time.Millisecond), 0, n) {
					t.Errorf("%s's silence limit in the seeded session is %d ticks, want %d", id, limit, SilenceTicks(int(tt.tick/time.Millisecond), 0, n))
				}
			}
		})
	}
}

// silenceLimit installs a plan of head h and worker w on s (head h), brings
// it up and returns w's silence limit.
func silenceLimit(t *testing.T, s *Session, w string) int {
	t.Helper()
	p := &wire.Plan{ID: 1, K: 1, Layers: 2, NEmbd: 2, DType: wire.F32, Devices: []wire.Device{
		{ID: tid("h"), Windows: []wire.Range{{Start: 0, End: 1}}}, {ID: tid(w), Windows: []wire.Range{{Start: 1, End: 2}}}}}
	s.Step(PlanInstalled{Plan: p})
	s.Step(Prepared{Plan: 1})
	s.Step(FrameIn{From: tid(w), Msg: &wire.PlanAck{Plan: 1}})
	if s.State() != Up {
		t.Fatalf("plan not up: %s", s.State())
	}
	_, limit, ok := s.SilenceOf(tid(w))
	if !ok {
		t.Fatalf("the head does not watch %s", w)
	}
	return limit
}
