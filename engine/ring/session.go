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

// pass is the head's forward pass in flight: tokens at pos, cut into
// micro-batches of batch rows (the last may be shorter), seqs first,
// first+1, …; started of them have had their first window computed.
// Pipelining (prima.cpp, appendix A.11): the head starts micro-batch i+1 as
// soon as it has sent i, so the next device computes i while the head
// computes i+1; only the last micro-batch runs the output head.
type pass struct {
	tokens  []int32
	pos     int
	batch   int
	first   uint64
	n       int // micro-batches
	started int
	verify  bool
	stream  int // the conversation (StartToken.Stream)
}

// micro returns micro-batch i's tokens and position.
func (p *pass) micro(i int) ([]int32, int) {
	lo := i * p.batch
	return p.tokens[lo:min(lo+p.batch, len(p.tokens))], p.pos + lo
}

func (p *pass) last() uint64 { return p.first + uint64(p.n) - 1 }

// Session is one device's state. It is not safe for concurrent use; the
// driver steps it from one goroutine.
type Session struct {
	self   deviceid.ID
	tickMs int // length of a Tick, for the RTT part of the silence limit

	state State
	plan  *wire.Plan  // nil when Down
	idx   int         // this device's position in plan.Devices
	head  deviceid.ID // plan.Devices[0].ID

	now       int                         // ticks since the session began
	watched   map[deviceid.ID]*silence    // per watched peer: its silence so far
	rtt       map[deviceid.ID]rttEstimate // per peer, its smoothed round trip; absent until measured
	lateTicks []lateTick                  // this device's ticks that came late, in the last GapWindow ticks (jitter)
	expect    map[deviceid.ID]Expectation // head: per worker, its window times as told (Expect)
	work      map[deviceid.ID]uint64      // head: per peer, the last sign of engine work it reported (Heard.Work)
	workAt    map[deviceid.ID]int         // head: per peer, the tick its sign of work last changed (or was first reported)
	prog      progress                    // head: the activations in the ring (stall detection)
	gaps      map[deviceid.ID][]gap       // per peer, silences it ended lately (longer than a tick)
	seeds     map[deviceid.ID]int         // per peer, the largest silence it ended in earlier jobs (Seed), in ticks
	upTicks   int                         // ticks with a plan Up: seeds count for the first GapWindow

	// next[r] is the seq of the next activation of round r this device
	// accepts (on the head: the next one back from the last device). Every
	// seq goes through every round on every device, and each window sees
	// its seqs in order, so one counter per round orders the inputs even
	// when micro-batches of a pipelined prompt interleave rounds.
	next   []uint64
	busy   bool               // a Compute is out
	cur    key                // the Compute out
	pos    int                // sequence position of row 0 of the Compute out
	verify bool               // the Compute out is a speculative verification's (Compute.Verify)
	stream int                // the Compute out is of this stream (Compute.Stream)
	ready  []*wire.Activation // accepted inputs waiting for the engine, by (seq, round)

	// head only
	acks    map[deviceid.ID]bool
	nextSeq uint64
	passes  []pass               // the forward passes in the ring, at most one per stream, in seq order
	without []deviceid.ID        // devices lost since the last installed plan
	lost    map[deviceid.ID]bool // devices already reported lost under this plan

	// installed holds the IDs of the plans this session installed: a frame
	// naming one of them after a re-plan is stale (late, harmless), one
	// naming any other plan comes from a broken or lying peer
	// (Dropped.NoPlan). A few entries: one per re-plan.
	installed map[uint64]bool
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
	s := &Session{self: self, tickMs: tickMs, watched: map[deviceid.ID]*silence{}, rtt: map[deviceid.ID]rttEstimate{}, gaps: map[deviceid.ID][]gap{}, seeds: map[deviceid.ID]int{},
		expect: map[deviceid.ID]Expectation{}, work: map[deviceid.ID]uint64{}, workAt: map[deviceid.ID]int{}, installed: map[uint64]bool{}}
	s.resetProgress()
	return s
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
		s.worked(ev.From, ev.Work)
		if ev.RTTMs > 0 {
			e := s.rtt[ev.From]
			e.add(ev.RTTMs)
			s.rtt[ev.From] = e
		}
	case Passed:
		s.heard(ev.From)
		s.passed(ev)
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
	s.noteTick(t.GapMs)
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
	if len(out) > 0 {
		return out
	}
	return s.stalls()
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
	r := s.rtt[id]
	return SilenceLimit(Silence{TickMs: s.tickMs, RTTMs: r.srtt, RTTVarMs: r.rttvar, GapTicks: largest, JitterMs: s.jitter()})
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
	s.installed[p.ID] = true
	s.state = Preparing
	s.next, s.busy, s.ready = make([]uint64, p.K), false, nil
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
	s.nextSeq, s.passes = 0, nil
	s.resetProgress()
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
	if !s.isHead() || s.state != Up || s.passOf(ev.Stream) != nil || len(ev.Tokens) == 0 || ev.Batch < 0 || ev.Stream < 0 || ev.Stream >= wire.MaxStreams {
		return []Action{Dropped{From: s.self, Reason: fmt.Sprintf("start token of stream %d while %s (in flight %v)", ev.Stream, s.state, s.passOf(ev.Stream) != nil)}}
	}
	batch := ev.Batch
	if batch == 0 || batch > len(ev.Tokens) {
		batch = len(ev.Tokens)
	}
	n := (len(ev.Tokens) + batch - 1) / batch
	s.passes = append(s.passes, pass{tokens: ev.Tokens, pos: ev.Pos, batch: batch, first: s.nextSeq, n: n, verify: ev.Verify, stream: ev.Stream})
	s.nextSeq += uint64(n)
	return s.schedule()
}

// passOf returns the pass of stream in flight, nil when none.
func (s *Session) passOf(stream int) *pass {
	for i := range s.passes {
		if s.passes[i].stream == stream {
			return &s.passes[i]
		}
	}
	return nil
}

// passFor returns the pass in flight that seq is a micro-batch of, nil when
// none.
func (s *Session) passFor(seq uint64) *pass {
	for i := range s.passes {
		if p := &s.passes[i]; p.first <= seq && seq <= p.last() {
			return p
		}
	}
	return nil
}

// InFlight returns the streams with a pass in the ring (head), in the
// order they started.
func (s *Session) InFlight() []int {
	var out []int
	for _, p := range s.passes {
		out = append(out, p.stream)
	}
	return out
}

// schedule gives the engine its next work when it is idle: the first
// accepted input by (seq, round), else (on the head) the first window of
// the next micro-batch of the pass. Inputs go first: an older micro-batch
// further round the ring is nearer to done, and it frees the devices
// after this one sooner. On the head, a micro-batch back from its last
// round runs the output head only when it is the pass's last; the others'
// logits would never be read.
func (s *Session) schedule() []Action {
	for !s.busy && len(s.ready) > 0 {
		a := s.ready[0]
		s.ready = s.ready[1:]
		round := a.Round
		if s.isHead() {
			round++ // back from the last device: the head's next round
			if round == s.plan.K && a.Seq != s.passFor(a.Seq).last() {
				continue // a micro-batch of the prompt is through every window
			}
		}
		s.busy, s.cur, s.pos, s.verify, s.stream = true, key{a.Seq, a.Round}, a.Pos, a.Verify, a.Stream
		if round == s.plan.K {
			return []Action{Compute{Seq: a.Seq, Round: a.Round, Output: true, Pos: a.Pos, Hidden: a, Verify: a.Verify, Stream: a.Stream}}
		}
		s.cur.round = round
		return []Action{Compute{Seq: a.Seq, Round: round, Window: s.plan.Devices[s.idx].Windows[round], Pos: a.Pos, Hidden: a, Verify: a.Verify, Stream: a.Stream}}
	}
	if s.busy || !s.isHead() {
		return nil
	}
	// The next micro-batch of the oldest pass that has one left: passes
	// start in seq order, so every device gets round 0 in seq order.
	for i := range s.passes {
		p := &s.passes[i]
		if p.started == p.n {
			continue
		}
		toks, pos := p.micro(p.started)
		seq := p.first + uint64(p.started)
		p.started++
		s.busy, s.cur, s.pos, s.verify, s.stream = true, key{seq, 0}, pos, p.verify, p.stream
		return []Action{Compute{Seq: seq, Round: 0, Window: s.plan.Devices[0].Windows[0], Tokens: toks, Pos: pos, Verify: p.verify, Stream: p.stream}}
	}
	return nil
}

// accept queues an accepted input in (seq, round) order.
func (s *Session) accept(a *wire.Activation) {
	at := len(s.ready)
	for at > 0 && (key{a.Seq, a.Round}).less(key{s.ready[at-1].Seq, s.ready[at-1].Round}) {
		at--
	}
	s.ready = slices.Insert(s.ready, at, a)
}

func (s *Session) computeDone(ev ComputeDone) []Action {
	if s.plan == nil || s.state != Up || !s.busy || ev.Seq != s.cur.seq || ev.Round != s.cur.round {
		return []Action{Dropped{From: s.self, Reason: fmt.Sprintf("result of seq=%d r=%d not awaited", ev.Seq, ev.Round)}}
	}
	s.busy = false
	if ev.Output {
		s.passes = slices.DeleteFunc(s.passes, func(p pass) bool { return p.last() == ev.Seq })
		// Another stream's work may be waiting for the engine.
		return append([]Action{EmitToken{Seq: ev.Seq, Token: ev.Token, Stream: s.stream}}, s.schedule()...)
	}
	if ev.Hidden == nil {
		return []Action{Dropped{From: s.self, Reason: "compute result without a hidden state"}}
	}
	me := s.plan.Devices[s.idx]
	win := me.Windows[ev.Round]
	a := *ev.Hidden
	a.Plan, a.Seq, a.Round, a.Layers, a.Pos, a.Verify, a.Stream = s.plan.ID, ev.Seq, ev.Round, win, s.pos, s.verify, s.stream
	var out []Action
	if k := s.plan.K; k > 1 {
		out = append(out, Prefetch{Window: me.Windows[(ev.Round+1)%k]})
	}
	if me.Release && s.plan.K > 1 {
		out = append(out, Release{Window: win})
	}
	if len(s.plan.Devices) == 1 {
		s.next[a.Round]++
		s.accept(&a) // the head is also the last device
	} else {
		to := s.plan.Devices[(s.idx+1)%len(s.plan.Devices)].ID
		out = append(out, Send{To: to, Msg: &a})
		if s.isHead() {
			s.sentItem(a.Rows)
		}
	}
	return append(out, s.schedule()...)
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
			if !s.installed[m.Plan] {
				return s.noPlan(from, "plan ack", m.Plan)
			}
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
			if !s.installed[m.Plan] {
				return s.noPlan(from, "commit", m.Plan)
			}
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
		if !s.installed[a.Plan] {
			return s.noPlan(from, "activation", a.Plan)
		}
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
	want := s.next[a.Round]
	if a.Seq != want || s.isHead() && (s.passFor(a.Seq) == nil || s.passFor(a.Seq).stream != a.Stream) {
		why := "out of order"
		if a.Seq < want {
			why = "duplicate"
		}
		return []Action{Dropped{From: from, Reason: fmt.Sprintf("%s activation seq=%d r=%d, expecting seq=%d r=%d", why, a.Seq, a.Round, want, a.Round)}}
	}
	s.next[a.Round]++
	s.accept(a)
	return s.schedule()
}

// noPlan drops a frame of a plan this session never installed. No device
// of a ring sends one (a worker installs each plan before it acknowledges
// it, and activations start after the head has every acknowledgement), so
// the peer is broken or lying: the frame is dropped and counted
// (Dropped.NoPlan), the link kept, as the agent's control link does with a
// frame it does not carry; a lying peer that also breaks the ring is found
// by the silence and stall rules.
func (s *Session) noPlan(from deviceid.ID, what string, plan uint64) []Action {
	return []Action{Dropped{From: from, Reason: fmt.Sprintf("%s of plan %d, which this device never installed", what, plan), NoPlan: true}}
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
		s.plan, s.state, s.busy, s.ready = nil, Down, false, nil
		clear(s.watched)
		return []Action{EndJob{Reason: "head " + id.String() + " lost: " + reason}}
	}
	if s.lost[id] {
		return nil
	}
	s.lost[id] = true
	s.without = append(s.without, id)
	why := "peer " + id.String() + " lost"
	if len(s.passes) > 0 {
		why += " mid-token"
	}
	return s.dropPlan([]Action{Replan{Without: slices.Clone(s.without), Reason: why + ": " + reason}})
}

// dropPlan stops serving on the head: the request in flight (if any) is
// resumed by a re-prefill once the next plan is Up (engine/ring/job's head job
// knows it is mid-request).
func (s *Session) dropPlan(out []Action) []Action {
	s.state, s.passes, s.busy, s.ready = Down, nil, false, nil
	// Keep plan and lost so that later losses add to Without; only the
	// next PlanInstalled clears them. Stop watching: a re-plan is coming.
	clear(s.watched)
	return out
}
