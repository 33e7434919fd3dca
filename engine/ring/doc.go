// Package ring is one device's view of a piped ring (PRP, prima.cpp §3.1;
// DESIGN §3, §7) as a pure state machine: Session.Step(Event) []Action. It
// opens no sockets, starts no goroutines and reads no clock (time comes as
// ticks, and how late a tick is as its data); the driver
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
// A prefill pass is pipelined (StartToken.Batch; prima.cpp, appendix
// A.11): the head cuts it into micro-batches, one seq each, and starts the
// next as soon as it has sent one, so device m+1 computes micro-batch i
// while device m computes i+1. A device queues the inputs that come while
// it computes and takes them in (seq, round) order; it accepts round r's
// activations in seq order (one counter per round), so every window sees
// the rows in order and its KV is what passes of Batch rows one after the
// other would leave. Only the last micro-batch runs the output head, and
// its token is the pass's (EmitToken). The devices share no more than the
// links: how many run at once is up to their CPUs.
//
// # Streams
//
// Several conversations go round one ring at once as streams (0 to
// wire.MaxStreams-1; StartToken.Stream, wire.Activation.Stream): every
// device keeps one KV per stream (Compute.Stream), and the head takes one
// pass per stream at a time. Seqs are the head's, one counter for all
// streams, so the order above holds unchanged: every device computes its
// queued inputs by (seq, round), whichever stream they are of. That is
// pipelining by stream, not batching: while device m computes stream A's
// token, device m−1 computes stream B's, so with M devices up to M streams
// keep M devices busy where one stream keeps one; each stream's rows are
// computed exactly as they would be alone. A lost device drops every
// stream's pass (one Replan); the head's driver re-prefills each. How
// many streams a ring runs is its plan's: each is a KV cache on every
// device, which Halda's memory rows hold for Plan.Streams of them
// (halda's doc, "Streams"), and engine/ring/job numbers streams below
// that, holding a request beyond them until one ends.
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
// and reported as Dropped. A frame (activation, plan ack, commit) of a plan
// this device never installed is one no device of a ring sends: it is
// dropped too, marked NoPlan, and the driver logs and counts it as a
// refusal (`homering doctor`), keeping the link. An activation from the
// wrong neighbour or against the plan's shape, dtype or windows means a
// broken or lying peer: it is disconnected and treated as lost.
//
// The head watches every device and a worker watches the head. A peer is
// lost when its link closes (PeerLost: a killed process, seen at once) or
// when it has been silent too long (a hung, stopped or unplugged one; see
// Silence). A lost worker makes the head drop the plan and emit
// Replan{Without}; the conversation is then re-prefilled on the new plan
// (engine/ring/job's head job knows its request was cut). A lost head ends the job on a worker (EndJob),
// which frees its memory.
//
// # Silence
//
// Every event from a watched peer is a sign of life: a Heard (the driver
// pings every link each tick; the pong carries the RTT) or any frame. Each
// Tick counts one tick of silence against every watched peer not heard
// since; a peer is lost when its count reaches its limit. A false loss
// costs a re-plan and a re-prefill, so silence is counted fairly:
//
//   - Order: the driver steps the events already queued before a Tick, so
//     a pong read just before the tick is not silence.
//   - Late ticks: Tick.GapMs is the time since the previous Tick by the
//     driver's clock. A tick more than LateTicks (2) periods late means
//     this device itself did not run (CPU starvation, paging): the peers'
//     answers may sit unread, so the tick counts against no one. At most
//     MaxForgiven (3) late ticks go uncounted per silence, so a device
//     starved for good still finds a dead peer, after at most limit + 3
//     ticks.
//   - Limit: SilenceLimit = max(3 ticks, max(4 × RTT, RTT + 4 × RTTVAR),
//     2 × the largest silence the peer ended in the last GapWindow (120)
//     ticks) + 2 × this device's jitter, capped at SilenceCap (12 ticks:
//     6 s at the runner's 500 ms tick, well inside the 10 s from a fault to
//     the next token). RTT and RTTVAR are the peer's pong round trips
//     smoothed as RFC 6298 does, so a link whose answers come back at
//     varying speed (a loaded peer, Wi-Fi) is allowed the variation. The
//     jitter is how late (beyond a period, short of forgiven) this
//     device's own ticks came in the last GapWindow ticks: a loaded
//     device reads its pongs late, and in a home its peers are likely
//     loaded too. A peer that once went quiet for 4 ticks (paging, starved
//     at a low priority) and came back is allowed 8 from then on; a
//     minute later it is forgotten. Whatever the measures, a peer that
//     really went silent is lost within SilenceCap + MaxForgiven ticks of
//     its last sign of life (7.5 s at 500 ms), and at once when its link
//     closes.
//   - Preparing: while a plan is prepared, a worker that has not
//     acknowledged it yet (to the head) and the head until the plan is up
//     (to a worker, whose slice it serves) get SilenceCap: fetching,
//     hashing and mapping a slice is the heaviest work of a job. A silence
//     then is remembered like any other: a peer that went quiet under load
//     may well do so again while serving.
//   - Across jobs: a new session knows nothing of its peers, so a peer's
//     first silence in it would meet the floor of 3 ticks. The runner
//     carries what earlier jobs learned: Gaps, at a job's end, lists the
//     silences each peer ended in the last GapWindow ticks (length and
//     age); Seed gives a new session such lengths per peer, and for its
//     first GapWindow ticks with a plan Up (preparing may take minutes)
//     the largest counts as one of the peer's own gaps. A peer that
//     really hangs is still lost within SilenceCap.
//
// # Stalls
//
// A peer whose engine hangs while its link lives (its pinger answers, so
// it is never silent) would hold the ring for ever. Each worker reports
// every activation it sends on (Passed, with what its window took; the
// driver sends a DeviceStats after each). The head counts the
// activations it sent into the ring and each worker's reports, so it knows
// which worker holds the oldest activation not yet passed on, and since
// when: since it got it, or since it passed its previous one. That
// worker is lost when it has held it for StallTicks(tick, expected, jitter)
// = 4 × its expected time for that activation + StallMargin (16 ticks) +
// 2 × jitter: the expected time is the larger of what the head was told
// (Expect: a window's decode time and prefill time per row) and the
// largest the worker reported under this plan, times the rows for a
// prefill micro-batch. With nothing known yet the bound is StallUnknown
// (120 ticks). With k > 1 each round's activation is its own item, so
// progress is checked per round, not per token.
//
// Each worker reports on its own link, so a report may come before its
// predecessor's for the same activation (the predecessor busy between
// sending it on and reporting, the head's link readers run in the other
// order: 2-3 times in a run of bench/ring.sh's row (g)). A worker that
// passed i on had them all, so the head takes as passed by a worker the
// most that it or any worker after it reported. Setting a report aside
// until its predecessor's came left that worker one behind for good,
// holding in the account what it had passed, and lost it as stalled, its
// engine idle, once it waited for its predecessor past its bound
// (stall_late_report.txt).
//
// A worker starved by other load (a CPU burner leaves a nice-10 runner a
// few percent) can take 70 × its expected time and still be working. Its
// pongs carry a sign of engine work (Heard.Work: its compute thread's CPU
// time), and the head counts an advance of it as progress: the worker
// holds its activation from then on. A frozen or deadlocked engine does
// not advance it and is lost at the bound as before; a peer that does not
// send it is judged by its reports alone. A worker that holds an activation
// in the head's account but never got it (the link from its predecessor
// closed: a worker does not report its successor's link) is lost at the
// bound too, its engine idle all along: the reason's "its engine did no
// work for N ticks", with N as large as the ticks held, tells it from a
// starved engine. The false losses of bench/ring.sh's loaded row were of
// this kind, not paging (engine/ring/driver's doc, "Pings").
//
// A device that joins is not the session's business: the agent's planner
// plans with it from the next request, and only when Adopt(current,
// candidate) holds: the predicted cost with it is below 0.95 × the current
// one (the thesis' τ), so a kept ring job is not given up for a small gain.
package ring
