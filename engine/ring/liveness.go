package ring

import (
	"fmt"

	"homering/discovery/deviceid"
)

// Liveness (doc.go, "Silence" and "Stalls"): what a peer's silence limit
// follows, and the head's watch on the ring's progress.

// Silence are the measures a peer's silence limit follows (SilenceLimit).
type Silence struct {
	TickMs   int // the period of Tick; non-positive leaves the ms terms out
	RTTMs    int // the peer's smoothed round trip; 0 until measured
	RTTVarMs int // its mean deviation (RFC 6298's RTTVAR)
	GapTicks int // the largest silence the peer ended lately
	JitterMs int // how late this device's own ticks came lately, at most
}

// SilenceLimit is how many silent ticks make a peer lost:
//
//	max(3 ticks, max(4 × RTT, RTT + 4 × RTTVAR), 2 × gap) + 2 × jitter
//
// rounded up to whole ticks and capped at SilenceCap. The round-trip term
// is RFC 6298's retransmission timeout with 4 × RTT as its floor: a link
// whose pongs come back at varying speed (a loaded peer, Wi-Fi) is allowed
// the variation, a steady one no more than before. The jitter term is this
// device's own lateness: ticks that came up to J ms late (not late enough
// to be forgiven, see LateTicks) mean this device is loaded, and so, in a
// home, likely its peers and the pongs it reads; each such tick is also
// worth less than a period of the peer's time.
func SilenceLimit(in Silence) int {
	n := max(2*max(in.GapTicks, 0), SilenceFloor)
	if in.TickMs > 0 {
		if in.RTTMs > 0 {
			rto := max(4*in.RTTMs, in.RTTMs+4*max(in.RTTVarMs, 0))
			n = max(n, ceilDiv(rto, in.TickMs))
		}
		if in.JitterMs > 0 {
			n += ceilDiv(2*in.JitterMs, in.TickMs)
		}
	}
	return min(n, SilenceCap)
}

// SilenceTicks is SilenceLimit for a steady RTT and no jitter.
func SilenceTicks(tickMs, rttMs, gapTicks int) int {
	return SilenceLimit(Silence{TickMs: tickMs, RTTMs: rttMs, GapTicks: gapTicks})
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// rttEstimate is a peer's round trip smoothed as RFC 6298 does (α = 1/8,
// β = 1/4), in ms.
type rttEstimate struct{ srtt, rttvar int }

func (e *rttEstimate) add(ms int) {
	if e.srtt == 0 {
		e.srtt, e.rttvar = ms, ms/2
		return
	}
	d := e.srtt - ms
	if d < 0 {
		d = -d
	}
	e.rttvar = (3*e.rttvar + d) / 4
	e.srtt = (7*e.srtt + ms + 4) / 8
}

// lateTick is one of this device's ticks that came after more than a
// period: when, and by how many ms.
type lateTick struct{ at, ms int }

// jitter is how late this device's ticks came in the last GapWindow ticks,
// at most (ms).
func (s *Session) jitter() int {
	j := 0
	for _, l := range s.lateTicks {
		if s.now-l.at <= GapWindow {
			j = max(j, l.ms)
		}
	}
	return j
}

// noteTick remembers how late a tick came (beyond its period), keeping
// only the last GapWindow ticks' worth.
func (s *Session) noteTick(gapMs int) {
	// A tick so late that it is forgiven (LateTicks) was a stop of this
	// device, and counted against no one: it is not jitter.
	if s.tickMs <= 0 || gapMs <= s.tickMs || gapMs > LateTicks*s.tickMs {
		return
	}
	ms := gapMs - s.tickMs
	keep := s.lateTicks[:0]
	for _, l := range s.lateTicks {
		if s.now-l.at <= GapWindow && l.ms > ms {
			keep = append(keep, l) // a later, larger one replaces the smaller ones
		}
	}
	s.lateTicks = append(keep, lateTick{at: s.now, ms: ms})
}

// Stall detection: a peer that answers pings but makes no progress.
const (
	// StallMargin is what a stall bound adds to the expected time, in
	// ticks (8 s at 500 ms): a window can take far longer than measured on
	// a device starved at its low priority (3 CPU burners leave a nice-10
	// runner a few percent), and a false loss costs a re-plan.
	StallMargin = 16
	// StallUnknown is the bound while nothing is known of a peer's
	// window times (no Expect, no report yet): one minute at 500 ms.
	StallUnknown = 120
)

// StallTicks is how many ticks a peer may hold an activation without
// passing it on: 4 × expectMs (its expected time for that activation),
// rounded up to ticks, plus StallMargin and this device's jitter; or
// StallUnknown when expectMs is not positive or there is no tick length.
func StallTicks(tickMs, expectMs, jitterMs int) int {
	if tickMs <= 0 || expectMs <= 0 {
		return StallUnknown
	}
	return ceilDiv(4*expectMs, tickMs) + StallMargin + ceilDiv(2*max(jitterMs, 0), tickMs)
}

// Expectation is how long a peer's window takes, in ms: for a one-row
// (decode) pass, and per row of a prefill micro-batch.
type Expectation struct {
	DecodeMs int
	RowMs    int
}

// ms is the expected time of a pass of rows rows: a prefill batch at its
// per-row rate, else at the decode rate per row (an upper bound: batching
// makes rows cheaper).
func (e Expectation) ms(rows int) int {
	if rows <= 1 {
		return max(e.DecodeMs, e.RowMs)
	}
	if e.RowMs > 0 {
		return rows * e.RowMs
	}
	return rows * e.DecodeMs
}

// Expect tells the head how long worker id's windows take (its largest
// window, from the plan's prediction or earlier jobs' measures); the stall
// bound follows the larger of this and what the worker reports in Passed.
// Zero fields are unknown.
func (s *Session) Expect(id deviceid.ID, e Expectation) { s.expect[id] = e }

// progress is the head's account of the activations in the ring under the
// current plan: every one it sends to the first worker is an item, and
// each worker passes the items on in order (a Passed per item), so worker
// m holds item i when its predecessor passed i and it has not.
//
// Each worker reports on its own link, so the head may hear a worker's
// report before its predecessor's for the same item (the predecessor busy
// or starved between sending the activation and its report, or the
// head's link readers scheduled in the other order). A worker that passed
// i items on had them all, so the account takes what a worker passed on
// as the most any worker from it on reported (done); a late report then
// changes nothing, and no report is ever set aside.
type progress struct {
	rows []int // per item sent and not yet through every worker, its rows
	// passed counts each worker's reports of the items in rows; below
	// zero while reports of items already through the ring are late.
	passed map[deviceid.ID]int
	since  map[deviceid.ID]int         // per worker, the tick since which it holds its current item
	seen   map[deviceid.ID]Expectation // per worker, the largest times it reported under this plan
}

func (s *Session) resetProgress() {
	s.prog = progress{passed: map[deviceid.ID]int{}, since: map[deviceid.ID]int{}, seen: map[deviceid.ID]Expectation{}}
}

// done returns how many items worker index m (1…) has passed on, as far
// as the head knows: the most that it or any worker after it reported.
func (s *Session) done(m int) int {
	n := 0
	for _, d := range s.plan.Devices[m:] {
		n = max(n, s.prog.passed[d.ID])
	}
	return n
}

// got returns how many items worker index m (1…) has been given.
func (s *Session) got(m int) int {
	if m == 1 {
		return len(s.prog.rows)
	}
	return s.done(m - 1)
}

// holds reports whether worker index m (1…) holds an item.
func (s *Session) holds(m int) bool { return s.done(m) < s.got(m) }

// sentItem notes an activation the head sent to the first worker.
func (s *Session) sentItem(rows int) {
	if !s.holds(1) {
		s.prog.since[s.plan.Devices[1].ID] = s.now // it was idle: it holds this one from now
	}
	s.prog.rows = append(s.prog.rows, rows)
}

// passed notes a worker's report that it sent an item on.
func (s *Session) passed(ev Passed) {
	if !s.isHead() || s.state != Up {
		return
	}
	m := s.plan.Index(ev.From)
	if m <= 0 || s.prog.passed[ev.From] >= len(s.prog.rows) {
		return // not a worker, or a report of more than the head sent
	}
	n := len(s.plan.Devices)
	type state struct {
		done  int
		holds bool
	}
	before := make([]state, n)
	for j := 1; j < n; j++ {
		before[j] = state{s.done(j), s.holds(j)}
	}
	s.prog.passed[ev.From]++
	if i := s.prog.passed[ev.From] - 1; i >= 0 && ev.ComputeMs > 0 {
		seen := s.prog.seen[ev.From]
		if rows := s.prog.rows[i]; rows <= 1 {
			seen.DecodeMs = max(seen.DecodeMs, ev.ComputeMs)
		} else {
			seen.RowMs = max(seen.RowMs, ceilDiv(ev.ComputeMs, rows))
		}
		s.prog.seen[ev.From] = seen
	}
	// A worker that passed an item on, or was idle and now holds one,
	// holds its current item from now.
	for j := 1; j < n; j++ {
		if s.done(j) > before[j].done || s.holds(j) && !before[j].holds {
			s.prog.since[s.plan.Devices[j].ID] = s.now
		}
	}
	// The items the last worker passed are through every worker: forget
	// them, so the account stays small over a long conversation.
	if through := s.done(n - 1); through > 0 {
		s.prog.rows = s.prog.rows[through:]
		for _, d := range s.plan.Devices[1:] {
			s.prog.passed[d.ID] -= through
		}
	}
}

// worked notes peer id's sign of engine work from a pong. An advance
// while it holds an activation is progress, as a Passed is: it holds it
// from now, so a worker starved to a fraction of its measured speed is
// not a stall while its engine computes, and one whose engine does nothing
// (hung, deadlocked) still is. A peer that reports none (0) is judged by
// its Passed alone.
func (s *Session) worked(id deviceid.ID, w uint64) {
	if w == 0 {
		return
	}
	prev, had := s.work[id]
	s.work[id] = w
	if !had || w != prev {
		s.workAt[id] = s.now
	}
	if !had || w <= prev || !s.isHead() || s.state != Up {
		return
	}
	if m := s.plan.Index(id); m > 0 && s.holds(m) {
		s.prog.since[id] = s.now
	}
}

// stallLimit is the stall bound for worker id holding an item of rows rows.
func (s *Session) stallLimit(id deviceid.ID, rows int) (limit, expectMs int) {
	e, seen := s.expect[id], s.prog.seen[id]
	expectMs = max(e.ms(rows), seen.ms(rows))
	return StallTicks(s.tickMs, expectMs, s.jitter()), expectMs
}

// stalls returns the loss of the first worker, in ring order, that has
// held an activation past its stall bound; nil when none has.
func (s *Session) stalls() []Action {
	if !s.isHead() || s.state != Up {
		return nil
	}
	for m := 1; m < len(s.plan.Devices); m++ {
		id := s.plan.Devices[m].ID
		if !s.holds(m) {
			continue
		}
		i := s.done(m)
		held := s.now - s.prog.since[id]
		if limit, expectMs := s.stallLimit(id, s.prog.rows[i]); held >= limit {
			why := fmt.Sprintf("stalled: answers pings but passed nothing on for %d ticks (limit %d, expected %d ms for %d rows)", held, limit, expectMs, s.prog.rows[i])
			if _, ok := s.work[id]; ok {
				// Says whether a starved worker's engine was working: a
				// stall of one that reports work is its engine's.
				why += fmt.Sprintf(", its engine did no work for %d ticks", s.now-s.workAt[id])
			}
			return s.peerLost(id, why)
		}
	}
	return nil
}

// StallOf returns how many ticks worker id has held its current
// activation and its bound; ok is false when it holds none (or this
// device is not a head serving a plan).
func (s *Session) StallOf(id deviceid.ID) (ticks, limit int, ok bool) {
	if !s.isHead() || s.state != Up {
		return 0, 0, false
	}
	m := s.plan.Index(id)
	if m <= 0 || !s.holds(m) {
		return 0, 0, false
	}
	limit, _ = s.stallLimit(id, s.prog.rows[s.done(m)])
	return s.now - s.prog.since[id], limit, true
}
