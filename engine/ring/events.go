package ring

import (
	"fmt"

	"homering/discovery/deviceid"
	"homering/engine/ring/wire"
)

// Event is something that happened to this device.
type Event interface{ isEvent() }

// FrameIn is a decoded message from a peer.
type FrameIn struct {
	From deviceid.ID
	Msg  wire.Msg
}

// Tick is one period of the driver's timer; all timeouts count ticks.
// GapMs is how long after the previous Tick the driver stepped this one (0:
// unknown, taken as on time): more than LateTicks periods means this device
// was starved, and the tick does not count the peers' silence (up to
// MaxForgiven per silence).
type Tick struct{ GapMs int }

// Heard says a peer answered a ping; RTTMs is the measured round trip.
// Work is the peer's sign of engine work when it answered (a count that
// grows while its engine computes: the driver sends its compute thread's
// CPU time in ns); 0 is not reported (an older peer, or a platform that
// cannot tell). On the head an advance of it is progress (doc.go,
// "Stalls").
type Heard struct {
	From  deviceid.ID
	RTTMs int
	Work  uint64
}

// Passed is a worker's word that it has sent an activation on to the next
// device (engine/ring/driver turns the DeviceStats a worker sends after
// each window it runs into it): on the head, the ring's progress that stall
// detection counts (doc.go, "Stalls"); it is also a sign of life.
// ComputeMs is what that window took on the worker (0: unknown).
type Passed struct {
	From      deviceid.ID
	ComputeMs int
}

// PeerLost says the link to a peer closed.
type PeerLost struct {
	ID     deviceid.ID
	Reason string
}

// PlanInstalled gives the head a new plan (from Halda, via the node). The
// plan's first device must be this one.
type PlanInstalled struct{ Plan *wire.Plan }

// Prepared says this device's windows of a plan are loaded (Code OK) or
// cannot be (another code, Text says why).
type Prepared struct {
	Plan uint64
	Code wire.Code
	Text string
}

// StartToken asks the head for one forward pass over Tokens at Pos (a
// prefill batch or one generated token). Batch > 0 pipelines it: the
// tokens go round the ring as micro-batches of Batch rows (the last may be
// shorter), each device computing one while the next computes the one
// before; the KV and the last micro-batch's logits are those of passes of
// Batch rows one after the other. 0: one batch of all the tokens.
//
// Verify marks a speculative verification: every window computes its rows
// with row-by-row attention (Compute.Verify, wire.Activation.Verify) and
// the output head gives every row's logits.
//
// Stream is the conversation (0 to wire.MaxStreams-1): each has its own KV
// on every device (Compute.Stream), and the head takes one pass per stream
// at a time, so passes of different streams go round the ring together,
// each device computing whatever input came first by (seq, round) while
// the others compute another stream's (doc.go, "Streams").
type StartToken struct {
	Tokens []int32
	Pos    int
	Batch  int
	Verify bool
	Stream int
}

// ComputeDone is the result of a Compute action: Hidden after the window,
// or the sampled Token when the action had Output set.
type ComputeDone struct {
	Seq    uint64
	Round  int
	Output bool
	Hidden *wire.Activation // Rows, NEmbd, DType, Data filled; the rest is set by the session
	Token  int32
}

func (FrameIn) isEvent()       {}
func (Tick) isEvent()          {}
func (Heard) isEvent()         {}
func (Passed) isEvent()        {}
func (PeerLost) isEvent()      {}
func (PlanInstalled) isEvent() {}
func (Prepared) isEvent()      {}
func (StartToken) isEvent()    {}
func (ComputeDone) isEvent()   {}

// Action is something the driver must do.
type Action interface {
	isAction()
	String() string
}

// Send a message to a peer.
type Send struct {
	To  deviceid.ID
	Msg wire.Msg
}

// Prepare this device for a plan: fetch its weight slices, open its
// windows; answer with Prepared.
type Prepare struct{ Plan *wire.Plan }

// Compute runs Window on Hidden (or, when Tokens is set, embeds Tokens at Pos
// first); with Output it then runs the output head and samples (on the head,
// Window may then be empty). Answer with ComputeDone carrying Seq and Round.
type Compute struct {
	Seq    uint64
	Round  int
	Window wire.Range
	Tokens []int32
	Pos    int
	Hidden *wire.Activation
	Output bool
	Verify bool // a speculative verification's rows (StartToken.Verify)
	Stream int  // whose KV the window extends (StartToken.Stream)
}

// EmitToken streams a sampled token.
type EmitToken struct {
	Seq    uint64
	Token  int32
	Stream int // the pass's (StartToken.Stream)
}

// Replan asks the node for a new plan without or with some devices.
type Replan struct {
	Without []deviceid.ID
	Reason  string
}

// Ready says the plan is Up.
type Ready struct {
	Plan uint64
}

// Prefetch hints that a window will run soon; Release that its pages may go.
type Prefetch struct{ Window wire.Range }
type Release struct{ Window wire.Range }

// EndJob drops the plan on a worker and frees its memory.
type EndJob struct{ Reason string }

// Disconnect closes the link to a peer that broke the protocol.
type Disconnect struct {
	ID     deviceid.ID
	Reason string
}

// Dropped reports a frame ignored on purpose (duplicate, stale, early), for
// debug logs and the scripts.
type Dropped struct {
	From   deviceid.ID
	Reason string
	// NoPlan: the frame names a plan this device never installed, which
	// no device of a ring sends (a broken or lying peer); the driver logs
	// and counts it as a refusal. Otherwise the frame is a late or
	// duplicate one of a working ring.
	NoPlan bool
}

func (Send) isAction()       {}
func (Prepare) isAction()    {}
func (Compute) isAction()    {}
func (EmitToken) isAction()  {}
func (Replan) isAction()     {}
func (Ready) isAction()      {}
func (Prefetch) isAction()   {}
func (Release) isAction()    {}
func (EndJob) isAction()     {}
func (Disconnect) isAction() {}
func (Dropped) isAction()    {}

func (a Send) String() string { return "Send " + a.To.String() + " " + MsgString(a.Msg) }
func (a Prepare) String() string {
	return fmt.Sprintf("Prepare plan=%d", a.Plan.ID)
}
func (a Compute) String() string {
	s := fmt.Sprintf("Compute seq=%d r=%d", a.Seq, a.Round)
	if a.Window.Len() > 0 {
		s += " layers=" + a.Window.String()
	}
	if a.Tokens != nil {
		s += fmt.Sprintf(" tokens=%v pos=%d", a.Tokens, a.Pos)
	}
	if a.Output {
		s += " output"
	}
	if a.Verify {
		s += " verify"
	}
	if a.Stream != 0 {
		s += fmt.Sprintf(" stream=%d", a.Stream)
	}
	return s
}
func (a EmitToken) String() string {
	if a.Stream != 0 {
		return fmt.Sprintf("EmitToken seq=%d token=%d stream=%d", a.Seq, a.Token, a.Stream)
	}
	return fmt.Sprintf("EmitToken seq=%d token=%d", a.Seq, a.Token)
}
func (a Replan) String() string {
	return fmt.Sprintf("Replan without=%v reason=%q", a.Without, a.Reason)
}
func (a Ready) String() string      { return fmt.Sprintf("Ready plan=%d", a.Plan) }
func (a Prefetch) String() string   { return "Prefetch " + a.Window.String() }
func (a Release) String() string    { return "Release " + a.Window.String() }
func (a EndJob) String() string     { return fmt.Sprintf("EndJob reason=%q", a.Reason) }
func (a Disconnect) String() string { return fmt.Sprintf("Disconnect %s reason=%q", a.ID, a.Reason) }
func (a Dropped) String() string {
	if a.NoPlan {
		return fmt.Sprintf("Dropped from=%s reason=%q no-plan", a.From, a.Reason)
	}
	return fmt.Sprintf("Dropped from=%s reason=%q", a.From, a.Reason)
}

// MsgString is a one-line summary of a message, without its data.
func MsgString(m wire.Msg) string {
	switch m := m.(type) {
	case *wire.Plan:
		s := fmt.Sprintf("PlanInstall plan=%d k=%d", m.ID, m.K)
		for _, d := range m.Devices {
			s += " " + d.ID.String() + "="
			for i, w := range d.Windows {
				if i > 0 {
					s += ","
				}
				s += w.String()
			}
		}
		return s
	case *wire.PlanAck:
		return fmt.Sprintf("PlanAck plan=%d code=%d", m.Plan, m.Code)
	case *wire.Commit:
		return fmt.Sprintf("Commit plan=%d", m.Plan)
	case *wire.Activation:
		s := fmt.Sprintf("Activation plan=%d seq=%d r=%d layers=%s pos=%d rows=%d bytes=%d", m.Plan, m.Seq, m.Round, m.Layers, m.Pos, m.Rows, len(m.Data))
		if m.Stream != 0 {
			s += fmt.Sprintf(" stream=%d", m.Stream)
		}
		if m.Verify {
			s += " verify"
		}
		return s
	case *wire.Token:
		return fmt.Sprintf("Token seq=%d token=%d", m.Seq, m.Token)
	case *wire.Goodbye:
		return fmt.Sprintf("Goodbye code=%d", m.Code)
	}
	return fmt.Sprintf("%T", m)
}
