// Package ring is one device's view of a piped ring (PRP, prima.cpp §3.1;
// DESIGN §3, §7) as a pure state machine: Session.Step(Event) []Action. It
// opens no sockets, starts no goroutines and reads no clock; the driver
// (engine/ring/transport's loop in the runner) turns frames, ticks and
// finished computations into events and carries out the actions. The same
// state and event always give the same actions.
//
// # Model
//
// A plan (wire.Plan) lists M devices in ring order, head first, and k
// rounds; in round r device m runs window W[m][r], and the windows tile the
// L layers round by round, device by device. For one forward pass (seq):
//
//	head: embed tokens, run W[0][0] → send to device 1 → … → device M−1
//	sends back to the head, which runs W[0][1] … until round k−1 comes
//	back; then the head runs output norm + output + sampling (Compute with
//	Output) and emits the token. The head driver feeds the next token.
//
// After running window r, a device hints Prefetch of its next window
// (r+1 mod k) when k > 1, and Release of window r when its plan entry says
// memory is short (Halda cases M1-M3, M5).
//
// FromHalda builds the wire plan from Halda's: ring order and windows as
// Halda chose them, Release set for every case but M4.
//
// # Lifecycle (thesis: Down → Preparing → Committing → Up)
//
// The head gets PlanInstalled, sends PlanInstall to every device and
// prepares itself (Prepare: fetch slices, open windows). Each device that
// is ready answers PlanAck and is Committing; when all acknowledged, the
// head sends Commit and every device is Up. The Commit and the first
// activation reach a worker on different links (from the head, from its
// predecessor), so the activation may come first: since the head starts
// passes only after committing, a worker that is Committing takes an
// activation of the plan from its predecessor as the commit (Ready, Up) and
// drops the late Commit as stale. A PlanAck with an error code
// makes the head re-plan without that device.
//
// # Order, duplicates, faults
//
// Each device expects its inputs in one order, (seq, round) with round
// 0…k−1 then the next seq; links are reliable and ordered, so any other
// activation (a duplicate, a late copy, one from an older plan) is dropped
// and reported as Dropped. An activation from the wrong neighbour or
// against the plan's shape, dtype or windows means a broken or lying peer:
// it is disconnected and treated as lost.
//
// The head watches every device and a worker watches the head. A peer is
// lost when its link closes (PeerLost) or when it has been silent for
// SilenceTicks(tick, rtt) = max(3 ticks, 4 × measured RTT) ticks (Heard
// events carry pongs and RTTs). A lost worker makes the head drop the plan
// and emit Replan{Without}; the conversation is then re-prefilled on the
// new plan (Ready.Resume says so). A lost head ends the job on a worker
// (EndJob), which frees its memory.
//
// A device that joins is adopted only between requests and only when
// Adopt(current, candidate) holds: the predicted cost with it is below
// 0.95 × the current one (the thesis' τ), so a reply is never interrupted
// for a small gain.
package ring
