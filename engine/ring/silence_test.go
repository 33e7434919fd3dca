package ring

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/engine/ring/wire"
)

// Loss detection: silent for max(3 ticks, 4 × RTT, 2 × the largest recent
// gap), capped at 12 ticks (doc.go, "Silence"; DESIGN §7; thesis §4.3).
func TestSilenceTicks(t *testing.T) {
	tests := []struct {
		name                   string
		tickMs, rttMs, gapTick int
		want                   int
	}{
		{"no RTT measured yet", 500, 0, 0, 3},
		{"fast LAN: 3 ticks dominate", 500, 2, 0, 3},
		{"4×RTT exactly 3 ticks", 100, 75, 0, 3},
		{"4×RTT above 3 ticks", 100, 80, 0, 4},
		{"rounded up", 100, 101, 0, 5},
		{"slow link", 250, 400, 0, 7},
		{"no tick length", 0, 400, 0, 3},
		{"negative RTT", 100, -5, 0, 3},
		{"a gap of one tick changes nothing", 500, 2, 1, 3},
		{"a gap of 2 ticks gives 4", 500, 2, 2, 4},
		{"a gap of 5 ticks gives 10", 500, 2, 5, 10},
		{"the gap beats the RTT", 100, 150, 4, 8},
		{"the RTT beats the gap", 100, 250, 2, 10},
		{"a long gap is capped", 500, 0, 9, 12},
		{"a long RTT is capped", 100, 400, 0, 12},
		{"a gap without a tick length", 0, 0, 4, 8},
		{"a negative gap is none", 500, 0, -4, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SilenceTicks(tt.tickMs, tt.rttMs, tt.gapTick); got != tt.want {
				t.Errorf("SilenceTicks(%d, %d, %d) = %d, want %d", tt.tickMs, tt.rttMs, tt.gapTick, got, tt.want)
			}
		})
	}
}

const testTickMs = 100

// step is what one device sees in one tick period: a Heard from each peer
// in heard (with rtt), or, with ack, b's PlanAck; then a Tick stepped
// gapMs after the previous one.
type step struct {
	heard string
	ack   bool
	rtt   int
	gapMs int
}

// ticks is n periods in which the peers in heard answer and ticks come on
// time.
func ticks(n int, heard string) []step {
	return slices.Repeat([]step{{heard: heard, gapMs: testTickMs}}, n)
}

// late is n periods in which nothing is read and each tick comes 3 periods
// after the previous one (this device was starved).
func late(n int) []step { return slices.Repeat([]step{{gapMs: 3 * testTickMs}}, n) }

var testPlan = &wire.Plan{ID: 1, K: 1, Layers: 3, NEmbd: 2, DType: wire.F32, Devices: []wire.Device{
	{ID: tid("a"), Windows: []wire.Range{{Start: 0, End: 1}}},
	{ID: tid("b"), Windows: []wire.Range{{Start: 1, End: 2}}},
	{ID: tid("c"), Windows: []wire.Range{{Start: 2, End: 3}}},
}}

// head returns the head a of testPlan; up: every device acknowledged it
// (else c has, b has not yet).
func head(up bool) *Session {
	s := New(tid("a"), testTickMs)
	s.Step(PlanInstalled{Plan: testPlan})
	s.Step(Prepared{Plan: 1})
	s.Step(FrameIn{From: tid("c"), Msg: &wire.PlanAck{Plan: 1}})
	if up {
		s.Step(FrameIn{From: tid("b"), Msg: &wire.PlanAck{Plan: 1}})
	}
	return s
}

// worker returns worker b of testPlan, preparing it or (up) serving it.
func worker(up bool) *Session {
	s := New(tid("b"), testTickMs)
	s.Step(FrameIn{From: tid("a"), Msg: testPlan})
	if up {
		s.Step(Prepared{Plan: 1})
		s.Step(FrameIn{From: tid("a"), Msg: &wire.Commit{Plan: 1}})
	}
	return s
}

// The silence rules in the pure session: which step finds the watched peer
// (b on the head, the head on a worker) lost, and why.
func TestSilence(t *testing.T) {
	c := slices.Concat[[]step, step]
	acked := []step{{ack: true, gapMs: testTickMs}}
	tests := []struct {
		name   string
		s      *Session
		steps  []step
		lostAt int    // 1-based step that reports the loss; 0: never
		reason string // in the loss's reason
	}{
		{"on time: lost at 3 ticks", head(true), ticks(3, "c"), 3, "b lost: silent for 3 ticks (limit 3)"},
		{"answers every tick: never lost", head(true), ticks(50, "bc"), 0, ""},
		{"late ticks do not count", head(true), c(late(3), ticks(2, "c")), 0, ""},
		// Counted, but a period of jitter: 2 more ticks (SilenceLimit).
		{"exactly 2 periods is not late", head(true), slices.Repeat([]step{{heard: "c", gapMs: 2 * testTickMs}}, 5), 5, "silent for 5 ticks (limit 5)"},
		{"an unknown gap is on time", head(true), slices.Repeat([]step{{heard: "c"}}, 3), 3, "silent for 3 ticks (limit 3)"},
		{"at most 3 late ticks per silence", head(true), late(6), 6, "b lost: silent for 3 ticks (limit 3)"},
		{"a sign of life restores the forgiveness", head(true), c(late(3), ticks(1, "c"), ticks(1, "bc"), late(3), ticks(1, "c")), 0, ""},
		{"a gap of 2 ticks raises the limit to 4", head(true), c(ticks(2, "c"), ticks(1, "bc"), ticks(3, "c")), 6, "silent for 4 ticks (limit 4)"},
		{"gaps ratchet the limit up", head(true), c(ticks(2, "c"), ticks(1, "bc"), ticks(2, "c"), ticks(1, "bc"), ticks(4, "c"), ticks(1, "bc"), ticks(8, "c")), 0, ""},
		{"up to the cap", head(true), c(ticks(2, "c"), ticks(1, "bc"), ticks(2, "c"), ticks(1, "bc"), ticks(4, "c"), ticks(1, "bc"), ticks(8, "c"), ticks(1, "bc"), ticks(11, "c")),
			31, "silent for 12 ticks (limit 12)"},
		{"a gap is remembered for 120 ticks", head(true), c(ticks(2, "c"), ticks(1, "bc"), ticks(117, "bc"), ticks(2, "c"), ticks(1, "bc")), 0, ""},
		{"then forgotten", head(true), c(ticks(2, "c"), ticks(1, "bc"), ticks(118, "bc"), ticks(2, "c")), 123, "silent for 3 ticks (limit 3)"},
		{"a long RTT is capped", head(true), c([]step{{heard: "bc", rtt: 5000, gapMs: testTickMs}}, ticks(12, "c")), 12, "silent for 12 ticks (limit 12)"},
		{"head: a worker preparing gets the cap", head(false), ticks(12, "c"), 12, "b lost: silent for 12 ticks (limit 12)"},
		{"head: a worker that acknowledged quickly gets 3 ticks", head(false), c(ticks(1, "c"), acked, ticks(3, "c")), 4, "silent for 3 ticks (limit 3)"},
		{"head: a silence while preparing is remembered", head(false), c(ticks(4, "c"), acked, ticks(7, "c")), 12, "silent for 8 ticks (limit 8)"},
		{"worker: the head preparing gets the cap", worker(false), ticks(12, ""), 12, "head a lost: silent for 12 ticks (limit 12)"},
		{"worker: the head serving gets 3 ticks", worker(true), ticks(3, ""), 3, "head a lost: silent for 3 ticks (limit 3)"},
		{"worker: late ticks do not count", worker(true), c(late(3), ticks(2, "")), 0, ""},
		// Across jobs (seeds): a new job's session knows what earlier jobs
		// in the same process saw of its peers. 3 ticks are a 1.5 s stall
		// at the runner's 500 ms tick.
		{"second job: a stall at its start after one in the first job is no loss", secondJob(c(ticks(2, "c"), ticks(1, "bc"))), c(ticks(3, "c"), ticks(1, "bc"), ticks(5, "bc")), 0, ""},
		{"second job: the same stall without history is a loss", secondJob(ticks(5, "bc")), ticks(3, "c"), 3, "b lost: silent for 3 ticks (limit 3)"},
		{"seeded: a peer that hangs is lost at twice the seed", seeded(head(true), "b", 2), ticks(4, "c"), 4, "silent for 4 ticks (limit 4)"},
		{"seeded: a peer that hangs is still lost within the cap", seeded(head(true), "b", 9, 2), ticks(12, "c"), 12, "silent for 12 ticks (limit 12)"},
		{"seeded: a seed for another peer changes nothing", seeded(head(true), "c", 5), ticks(3, "c"), 3, "b lost: silent for 3 ticks (limit 3)"},
		{"seeded: seeds count for the first 120 ticks", seeded(head(true), "b", 2), c(ticks(116, "bc"), ticks(2, "c"), ticks(1, "bc")), 0, ""},
		{"seeded: then they are forgotten", seeded(head(true), "b", 2), c(ticks(120, "bc"), ticks(3, "c")), 122, "silent for 3 ticks (limit 3)"},
		{"seeded: a long preparation does not use them up", seeded(head(false), "b", 2), c(ticks(130, "bc"), acked, ticks(2, "c"), ticks(1, "bc")), 0, ""},
		{"seeded: a longer gap of its own raises the limit further", seeded(head(true), "b", 3), c(ticks(5, "c"), ticks(1, "bc"), ticks(8, "c")), 0, ""},
		{"worker: a seeded head's stall is no loss", seeded(worker(true), "a", 2), c(ticks(3, ""), ticks(1, "a")), 0, ""},
		{"worker: unseeded, the same stall is a loss", worker(true), ticks(3, ""), 3, "head a lost: silent for 3 ticks (limit 3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lostAt, reason := runSteps(tt.s, tt.steps)
			if lostAt != tt.lostAt || !strings.Contains(reason, tt.reason) {
				t.Errorf("lost at step %d (%q), want step %d (%q)", lostAt, reason, tt.lostAt, tt.reason)
			}
		})
	}
}

// runSteps steps s through steps until a peer is lost; it returns the
// 1-based step that lost it (0: none) and why.
func runSteps(s *Session, steps []step) (lostAt int, reason string) {
	for i, st := range steps {
		var out []Action
		for _, p := range strings.Split(st.heard, "") {
			out = append(out, s.Step(Heard{From: tid(p), RTTMs: st.rtt})...)
		}
		if st.ack {
			out = append(out, s.Step(FrameIn{From: tid("b"), Msg: &wire.PlanAck{Plan: 1}})...)
		}
		out = append(out, s.Step(Tick{GapMs: st.gapMs})...)
		for _, a := range out {
			switch a := a.(type) {
			case Replan:
				return i + 1, named(a.Reason)
			case EndJob:
				return i + 1, named(a.Reason)
			}
		}
	}
	return 0, ""
}

// seeded seeds s with silences peer ended in earlier jobs.
func seeded(s *Session, peer string, ticks ...int) *Session {
	s.Seed(tid(peer), ticks...)
	return s
}

// secondJob runs a first job's head through first, then returns a new
// head seeded with what the first one's Gaps report, as the runner does.
func secondJob(first []step) *Session {
	s := head(true)
	runSteps(s, first)
	next := head(true)
	for id, gs := range s.Gaps() {
		for _, g := range gs {
			next.Seed(id, g.Ticks)
		}
	}
	return next
}

// What a job's session hands on: the silences each peer ended in the last
// GapWindow ticks, with their age; not the seeds it was given.
func TestGaps(t *testing.T) {
	c := slices.Concat[[]step, step]
	tests := []struct {
		name  string
		s     *Session
		steps []step
		want  map[string][]Gap
	}{
		{"none", head(true), ticks(10, "bc"), map[string][]Gap{}},
		{"a silence of one tick is no gap", head(true), c(ticks(1, "c"), ticks(3, "bc")), map[string][]Gap{}},
		{"one gap, 11 ticks old", head(true), c(ticks(2, "c"), ticks(11, "bc")), map[string][]Gap{"b": {{Ticks: 2, Age: 11}}}},
		// The tick a peer answers in counts one tick of its next silence.
		{"oldest first", head(true), c(ticks(2, "c"), ticks(1, "bc"), ticks(2, "c"), ticks(4, "bc")), map[string][]Gap{"b": {{Ticks: 2, Age: 7}, {Ticks: 3, Age: 4}}}},
		{"per peer", head(true), c(ticks(2, "c"), ticks(1, "bc"), ticks(1, "b"), ticks(5, "bc")), map[string][]Gap{"b": {{Ticks: 2, Age: 7}}, "c": {{Ticks: 2, Age: 5}}}},
		{"seeds are not handed on", seeded(head(true), "c", 5), ticks(3, "bc"), map[string][]Gap{}},
		{"120 ticks old: still there", head(true), c(ticks(2, "c"), ticks(120, "bc")), map[string][]Gap{"b": {{Ticks: 2, Age: 120}}}},
		{"older: gone", head(true), c(ticks(2, "c"), ticks(121, "bc")), map[string][]Gap{}},
		{"worker: the head's gaps", worker(true), c(ticks(2, ""), ticks(4, "a")), map[string][]Gap{"a": {{Ticks: 2, Age: 4}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(tt.s, tt.steps)
			if diff := cmp.Diff(tt.want, byName(tt.s.Gaps())); diff != "" {
				t.Errorf("Gaps (-want +got):\n%s", diff)
			}
		})
	}
}
