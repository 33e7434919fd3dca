package ring

import (
	"fmt"
	"maps"
	"slices"

	"homering/discovery/deviceid"
	"homering/engine/ring/wire"
)

// State is a device's place in the plan lifecycle.
type State int

const (
	Down       State = iota // no plan
	Preparing               // fetching slices, opening windows
	Committing              // ready, waiting for every device (worker: for Commit)
	Up                      // serving the plan
)

func (s State) String() string {
	return [...]string{"Down", "Preparing", "Committing", "Up"}[s]
}

// key orders a device's inputs: seq, then round.
type key struct {
	seq   uint64
	round int
}

func (a key) less(b key) bool { return a.seq < b.seq || a.seq == b.seq && a.round < b.round }

// Session is one device's state. It is not safe for concurrent use; the
// driver steps it from one goroutine.
type Session struct {
	self   deviceid.ID
	tickMs int // length of a Tick, for the RTT part of the silence limit

	state State
	plan  *wire.Plan  // nil when Down
	idx   int         // this device's position in plan.Devices
	head  deviceid.ID // plan.Devices[0].ID

	now     int                      // ticks since the session began
	watched map[deviceid.ID]*silence // per watched peer: its silence so far
	rtt     map[deviceid.ID]int      // ms, per peer; 0 until measured
	gaps    map[deviceid.ID][]gap    // per peer, silences it ended lately (longer than a tick)
	seeds   map[deviceid.ID]int      // per peer, the largest silence it ended in earlier jobs (Seed), in ticks
	upTicks int                      // ticks with a plan Up: seeds count for the first GapWindow

	expect key  // the next input this device accepts
	busy   bool // a Compute is out
	pos    int  // sequence position of row 0 of the pass being computed

	// head only
	acks     map[deviceid.ID]bool
	nextSeq  uint64
	inflight bool                 // a forward pass is in the ring
	without  []deviceid.ID        // devices lost since the last installed plan
	lost     map[deviceid.ID]bool // devices already reported lost under this plan
}

// silence is a watched peer's silence since its last sign of life.
type silence struct {
	ticks    int // ticks counted against it
	forgiven int // late ticks not counted
}

// gap is a silence a sign of life ended: at which tick, how many ticks long.
type gap struct{ at, ticks int }

// New returns a session for device self, Down; tickMs is the period of Tick.
func New(self deviceid.ID, tickMs int) *Session {
	return &Session{self: self, tickMs: tickMs, watched: map[deviceid.ID]*silence{}, rtt: map[deviceid.ID]int{}, gaps: map[deviceid.ID][]gap{}, seeds: map[deviceid.ID]int{}}
}

// Gap is a silence a peer ended (doc.go, "Silence"): how many ticks it
// lasted and how many ticks ago it ended.
type Gap struct {
	Ticks int
	Age   int
}

// Seed gives the session the silences (in ticks of its own tick) that peer
// ended in earlier jobs: for the session's first GapWindow ticks with a
// plan Up (preparing one may take long), the peer's silence limit counts
// the largest as one of its own gaps. So a new job does not start with no
// history and take a peer that is often quiet (starved, paging) for lost
// at its first silence. Non-positive ticks are ignored.
func (s *Session) Seed(peer deviceid.ID, ticks ...int) {
	for _, t := range ticks {
		s.seeds[peer] = max(s.seeds[peer], t)
	}
}

// Gaps returns, per peer, the silences this session saw it end in the last
// GapWindow ticks, oldest first: what the next job's session may be seeded
// with. Seeds are not among them (they came from elsewhere).
func (s *Session) Gaps() map[deviceid.ID][]Gap {
	out := map[deviceid.ID][]Gap{}
	for id, gs := range s.gaps {
		for _, g := range gs {
			if age := s.now - g.at; age <= GapWindow {
				out[id] = append(out[id], Gap{Ticks: g.ticks, Age: age})
			}
		}
	}
	return out
}

// Busy reports whether a Compute of this device is out.
func (s *Session) Busy() bool { return s.busy }

// Self returns this device's ID.
func (s *Session) Self() deviceid.ID { return s.self }

// State returns the lifecycle state.
func (s *Session) State() State { return s.state }

// Plan returns the installed plan, nil when Down.
func (s *Session) Plan() *wire.Plan { return s.plan }

// Silence detection (doc.go, "Silence").
const (
	// SilenceFloor is the least silence, in ticks, that makes a peer lost.
	SilenceFloor = 3
	// SilenceCap is the most: 6 s at the runner's 500 ms tick, so a hung
	// peer is caught well inside the 10 s from a fault to the next token.
	SilenceCap = 12
	// LateTicks: a Tick that comes more than this many periods after the
	// previous one is late (this device itself was starved).
	LateTicks = 2
	// MaxForgiven is how many late ticks one silence may leave uncounted,
	// so that a device starved for good still finds a dead peer.
	MaxForgiven = 3
	// GapWindow is how many ticks a silence that ended is remembered (one
	// minute at 500 ms).
	GapWindow = 120
)

// SilenceTicks is how many silent ticks make a peer lost: max(3 ticks,
// 4 × RTT, 2 × the largest silence it ended lately (gapTicks)), rounded up
// to whole ticks and capped at SilenceCap. A non-positive tick or RTT
// leaves the RTT out.
func SilenceTicks(tickMs, rttMs, gapTicks int) int {
	n := 2 * max(gapTicks, 0)
	if tickMs > 0 && rttMs > 0 {
		n = max(n, (4*rttMs+tickMs-1)/tickMs)
	}
	return min(max(n, SilenceFloor), SilenceCap)
}

// Adopt reports whether a plan predicted to cost candidateMs per token is
// worth switching to from one costing currentMs: the gain must be clear
// (candidate < 0.95 × current, the thesis' τ) to pay for the re-prefill.
func Adopt(currentMs, candidateMs float64) bool {
	return candidateMs > 0 && currentMs > 0 && candidateMs < 0.95*currentMs
}

func (s *Session) isHead() bool { return s.plan != nil && s.idx == 0 }

// Step advances the session by one event and returns what the driver must
// do, in order. It never blocks.
func (s *Session) Step(ev Event) []Action {
	switch ev := ev.(type) {
	case Tick:
		return s.tick(ev)
	case Heard:
		s.heard(ev.From)
		if ev.RTTMs > 0 {
			s.rtt[ev.From] = ev.RTTMs
		}
	case PeerLost:
		return s.peerLost(ev.ID, "link closed: "+ev.Reason)
	case PlanInstalled:
		return s.installHead(ev.Plan)
	case Prepared:
		return s.prepared(ev)
	case StartToken:
		return s.startToken(ev)
	case ComputeDone:
		return s.computeDone(ev)
	case FrameIn:
		s.heard(ev.From)
		return s.frameIn(ev.From, ev.Msg)
	}
	return nil
}

func (s *Session) tick(t Tick) []Action {
	s.now++
	if s.state == Up {
		s.upTicks++
	}
	// A late tick means this device itself did not run (starved, paging):
	// the peers' answers may be waiting unread, so it is not their silence.
	late := s.tickMs > 0 && t.GapMs > LateTicks*s.tickMs
	var out []Action
	// Sorted, so that the actions do not depend on map order.
	for _, id := range slices.SortedFunc(maps.Keys(s.watched), deviceid.ID.Compare) {
		w, watched := s.watched[id]
		if !watched {
			continue // a loss earlier in this tick dropped the plan and stopped watching
		}
		if late && w.forgiven < MaxForgiven {
			w.forgiven++
			continue
		}
		w.ticks++
		if limit := s.silenceLimit(id); w.ticks >= limit {
			out = append(out, s.peerLost(id, fmt.Sprintf("silent for %d ticks (limit %d)", w.ticks, limit))...)
		}
	}
	return out
}

// heard notes a sign of life of peer id: its silence ends, and is
// remembered when it was longer than a tick (a silence while preparing
// too: a peer that went quiet under load may well do so again).
func (s *Session) heard(id deviceid.ID) {
	w, ok := s.watched[id]
	if !ok {
		return
	}
	if w.ticks > 1 {
		gs := slices.DeleteFunc(s.gaps[id], func(g gap) bool { return s.now-g.at > GapWindow })
		s.gaps[id] = append(gs, gap{at: s.now, ticks: w.ticks})
	}
	*w = silence{}
}

// silenceLimit is how many silent ticks make watched peer id lost now.
func (s *Session) silenceLimit(id deviceid.ID) int {
	if s.preparing(id) {
		return SilenceCap
	}
	largest := 0
	if s.upTicks <= GapWindow {
		largest = s.seeds[id]
	}
	for _, g := range s.gaps[id] {
		if s.now-g.at <= GapWindow {
			largest = max(largest, g.ticks)
		}
	}
	return SilenceTicks(s.tickMs, s.rtt[id], largest)
}

// SilenceOf returns how many ticks peer id has been silent and how many
// make it lost now; ok is false when this device does not watch id.
func (s *Session) SilenceOf(id deviceid.ID) (ticks, limit int, ok bool) {
	w, ok := s.watched[id]
	if !ok {
		return 0, 0, false
	}
	return w.ticks, s.silenceLimit(id), true
}

// preparing reports whether peer id is busy preparing this device's plan:
// on the head, a worker that has not acknowledged it yet (fetching and
// hashing its slice, opening windows); on a worker, the head until the plan
// is up (it serves the slices). Both are at their heaviest CPU and disk
// work of a job then, so they get the longest limit.
func (s *Session) preparing(id deviceid.ID) bool {
	if s.plan == nil || s.state != Preparing && s.state != Committing {
		return false
	}
	if s.isHead() {
		return !s.acks[id]
	}
	return id == s.head
}

// watch restarts failure detection for the peers this device watches.
func (s *Session) watch() {
	clear(s.watched)
	for i, d := range s.plan.Devices {
		if d.ID != s.self && (s.idx == 0 || i == 0) {
			s.watched[d.ID] = &silence{}
		}
	}
}

func (s *Session) install(p *wire.Plan, idx int) {
	s.plan, s.idx, s.head = p, idx, p.Devices[0].ID
	s.state = Preparing
	s.expect, s.busy = key{}, false
	s.watch()
}

func (s *Session) installHead(p *wire.Plan) []Action {
	if p == nil || len(p.Devices) == 0 || p.Devices[0].ID != s.self {
		return []Action{Dropped{From: s.self, Reason: "plan installed on a device that is not its head"}}
	}
	s.install(p, 0)
	s.acks = map[deviceid.ID]bool{}
	s.lost = map[deviceid.ID]bool{}
	s.without = nil
	s.nextSeq, s.inflight = 0, false
	out := make([]Action, 0, len(p.Devices))
	for _, d := range p.Devices[1:] {
		out = append(out, Send{To: d.ID, Msg: p})
	}
	return append(out, Prepare{Plan: p})
}

func (s *Session) prepared(ev Prepared) []Action {
	if s.plan == nil || ev.Plan != s.plan.ID || s.state != Preparing {
		return nil
	}
	if s.isHead() {
		if ev.Code != wire.CodeOK {
			return s.dropPlan([]Action{Replan{Without: s.without, Reason: "head cannot serve the plan: " + ev.Text}})
		}
		s.acks[s.self] = true
		s.state = Committing
		return s.maybeCommit()
	}
	out := []Action{Send{To: s.head, Msg: &wire.PlanAck{Plan: ev.Plan, Code: ev.Code, Text: ev.Text}}}
	if ev.Code != wire.CodeOK {
		s.plan, s.state = nil, Down
		clear(s.watched)
		return append(out, EndJob{Reason: "cannot serve the plan: " + ev.Text})
	}
	s.state = Committing
	return out
}

func (s *Session) maybeCommit() []Action {
	if len(s.acks) < len(s.plan.Devices) {
		return nil
	}
	s.state = Up
	var out []Action
	for _, d := range s.plan.Devices[1:] {
		out = append(out, Send{To: d.ID, Msg: &wire.Commit{Plan: s.plan.ID}})
	}
	out = append(out, Ready{Plan: s.plan.ID})
	return append(out, Prefetch{Window: s.plan.Devices[0].Windows[0]})
}

func (s *Session) startToken(ev StartToken) []Action {
	if !s.isHead() || s.state != Up || s.inflight || len(ev.Tokens) == 0 {
		return []Action{Dropped{From: s.self, Reason: fmt.Sprintf("start token while %s (in flight %v)", s.state, s.inflight)}}
	}
	seq := s.nextSeq
	s.nextSeq++
	s.inflight, s.busy = true, true
	s.expect, s.pos = key{seq, 0}, ev.Pos
	return []Action{Compute{Seq: seq, Round: 0, Window: s.plan.Devices[0].Windows[0], Tokens: ev.Tokens, Pos: ev.Pos}}
}

func (s *Session) computeDone(ev ComputeDone) []Action {
	if s.plan == nil || s.state != Up || !s.busy || ev.Seq != s.expect.seq || ev.Round != s.expect.round {
		return []Action{Dropped{From: s.self, Reason: fmt.Sprintf("result of seq=%d r=%d not awaited", ev.Seq, ev.Round)}}
	}
	s.busy = false
	if ev.Output {
		s.inflight = false
		return []Action{EmitToken{Seq: ev.Seq, Token: ev.Token}}
	}
	if ev.Hidden == nil {
		return []Action{Dropped{From: s.self, Reason: "compute result without a hidden state"}}
	}
	me := s.plan.Devices[s.idx]
	win := me.Windows[ev.Round]
	a := *ev.Hidden
	a.Plan, a.Seq, a.Round, a.Layers, a.Pos = s.plan.ID, ev.Seq, ev.Round, win, s.pos
	var out []Action
	if k := s.plan.K; k > 1 {
		out = append(out, Prefetch{Window: me.Windows[(ev.Round+1)%k]})
	}
	if me.Release && s.plan.K > 1 {
		out = append(out, Release{Window: win})
	}
	// The next input this device accepts is the next round's.
	s.expect = next(s.expect, s.plan.K)
	if s.isHead() {
		s.expect = key{ev.Seq, ev.Round} // the head awaits this round back from the last device
	}
	if len(s.plan.Devices) == 1 {
		return append(out, s.afterRound(&a)...)
	}
	to := s.plan.Devices[(s.idx+1)%len(s.plan.Devices)].ID
	return append(out, Send{To: to, Msg: &a})
}

func next(k key, rounds int) key {
	if k.round+1 < rounds {
		return key{k.seq, k.round + 1}
	}
	return key{k.seq + 1, 0}
}

// afterRound runs on the head when round a.Round has gone round the ring.
func (s *Session) afterRound(a *wire.Activation) []Action {
	s.busy = true
	if a.Round+1 < s.plan.K {
		s.expect = key{a.Seq, a.Round + 1}
		return []Action{Compute{Seq: a.Seq, Round: a.Round + 1, Window: s.plan.Devices[0].Windows[a.Round+1], Pos: a.Pos, Hidden: a}}
	}
	s.expect = key{a.Seq, a.Round}
	return []Action{Compute{Seq: a.Seq, Round: a.Round, Output: true, Pos: a.Pos, Hidden: a}}
}

func (s *Session) frameIn(from deviceid.ID, m wire.Msg) []Action {
	switch m := m.(type) {
	case *wire.Plan:
		if s.plan != nil && s.isHead() {
			return []Action{Dropped{From: from, Reason: "plan sent to a head"}}
		}
		idx := m.Index(s.self)
		if m.Devices[0].ID != from || idx <= 0 {
			return s.disconnect(from, "plan install from a device that is not its head, or without this device")
		}
		s.install(m, idx)
		return []Action{Prepare{Plan: m}}
	case *wire.PlanAck:
		if !s.isHead() || m.Plan != s.plan.ID || s.state != Committing && s.state != Preparing {
			return []Action{Dropped{From: from, Reason: "stale plan ack"}}
		}
		if m.Code != wire.CodeOK {
			return s.peerLost(from, fmt.Sprintf("cannot serve the plan (code %d): %s", m.Code, m.Text))
		}
		s.acks[from] = true
		if s.state == Committing {
			return s.maybeCommit()
		}
		return nil
	case *wire.Commit:
		if s.plan == nil || s.isHead() || from != s.head || m.Plan != s.plan.ID || s.state != Committing {
			return []Action{Dropped{From: from, Reason: "stale commit"}}
		}
		s.state = Up
		return []Action{Ready{Plan: m.Plan}, Prefetch{Window: s.plan.Devices[s.idx].Windows[0]}}
	case *wire.Activation:
		return s.activation(from, m)
	case *wire.Goodbye:
		return s.peerLost(from, fmt.Sprintf("said goodbye (code %d): %s", m.Code, m.Text))
	}
	return []Action{Dropped{From: from, Reason: fmt.Sprintf("unexpected %T", m)}}
}

func (s *Session) activation(from deviceid.ID, a *wire.Activation) []Action {
	// The head sends activations of a plan only once every device has
	// acknowledged it, so on a worker that waits for the Commit an
	// activation of the plan is that commit: it came on the link from the
	// previous device and overtook the head's Commit on another link.
	early := s.plan != nil && !s.isHead() && a.Plan == s.plan.ID && s.state == Committing
	if s.plan == nil || a.Plan != s.plan.ID || s.state != Up && !early {
		return []Action{Dropped{From: from, Reason: fmt.Sprintf("activation of plan %d, not serving it", a.Plan)}}
	}
	n := len(s.plan.Devices)
	prev := (s.idx + n - 1) % n
	if s.plan.Devices[prev].ID != from {
		return s.disconnect(from, "activation from a device that is not the previous one in the ring")
	}
	if err := s.plan.CheckActivation(a); err != nil {
		return s.disconnect(from, err.Error())
	}
	if a.Layers != s.plan.Devices[prev].Windows[a.Round] {
		return s.disconnect(from, fmt.Sprintf("activation after layers %s, the sender's window is %s", a.Layers, s.plan.Devices[prev].Windows[a.Round]))
	}
	if early {
		s.state = Up
		out := []Action{Ready{Plan: a.Plan}, Prefetch{Window: s.plan.Devices[s.idx].Windows[0]}}
		return append(out, s.activation(from, a)...)
	}
	got := key{a.Seq, a.Round}
	if s.busy || got != s.expect || (s.isHead() && !s.inflight) {
		why := "out of order"
		if got.less(s.expect) || s.busy {
			why = "duplicate"
		}
		return []Action{Dropped{From: from, Reason: fmt.Sprintf("%s activation seq=%d r=%d, expecting seq=%d r=%d", why, a.Seq, a.Round, s.expect.seq, s.expect.round)}}
	}
	if s.isHead() {
		return s.afterRound(a)
	}
	s.busy, s.pos = true, a.Pos
	return []Action{Compute{Seq: a.Seq, Round: a.Round, Window: s.plan.Devices[s.idx].Windows[a.Round], Pos: a.Pos, Hidden: a}}
}

// disconnect drops a peer that broke the protocol and treats it as lost.
func (s *Session) disconnect(id deviceid.ID, reason string) []Action {
	return append([]Action{Disconnect{ID: id, Reason: reason}}, s.peerLost(id, "broke the protocol: "+reason)...)
}

func (s *Session) peerLost(id deviceid.ID, reason string) []Action {
	if s.plan == nil || s.plan.Index(id) < 0 {
		return nil
	}
	if !s.isHead() {
		if id != s.head {
			return nil // the head watches everyone and re-plans
		}
		s.plan, s.state, s.busy = nil, Down, false
		clear(s.watched)
		return []Action{EndJob{Reason: "head " + id.String() + " lost: " + reason}}
	}
	if s.lost[id] {
		return nil
	}
	s.lost[id] = true
	s.without = append(s.without, id)
	why := "peer " + id.String() + " lost"
	if s.inflight {
		why += " mid-token"
	}
	return s.dropPlan([]Action{Replan{Without: slices.Clone(s.without), Reason: why + ": " + reason}})
}

// dropPlan stops serving on the head: the request in flight (if any) is
// resumed by a re-prefill once the next plan is Up (the runner's head job
// knows it is mid-request).
func (s *Session) dropPlan(out []Action) []Action {
	s.state, s.inflight, s.busy = Down, false, false
	// Keep plan and lost so that later losses add to Without; only the
	// next PlanInstalled clears them. Stop watching: a re-plan is coming.
	clear(s.watched)
	return out
}
