// Package driver runs one device's ring.Session for real: it turns frames
// from engine/ring/transport connections, a ticker and finished computations
// into events, steps the session from a single goroutine, and carries out
// the actions (send frames, compute on an Engine, prefetch or release
// weights, report tokens and re-plans to the caller).
//
// # Model
//
// Run(ctx) owns the session; nothing else touches it. Inputs arrive on one
// channel: Post (the caller: PlanInstalled, StartToken), one reader
// goroutine per link (FrameIn, or PeerLost when the link
// fails or a frame does not decode: a malformed or oversized frame closes
// the link and counts as a lost peer), a ticker (Tick), and the engine
// goroutine (ComputeDone, Prepared). Everything that touches the Engine
// (Prepare, Compute, Prefetch, Release, closing it) runs in order on that one
// goroutine, so engine calls never overlap, and a slow Prepare (a slice
// download) or Compute never stalls ticks, pings and frames.
//
// Each tick the loop first steps the events already queued (a pong or frame
// read before the tick is a sign of life before it, not silence), then
// pings every link and steps Tick{GapMs}: the time since the previous tick
// by this process's clock, so that the session can tell a tick late
// because this process was starved from a silent peer (engine/ring, doc
// "Silence").
//
// # Pings
//
// The code that answers pings never waits behind paging, hashing or the
// loop. A link's reader answers a ping itself, waiting on neither the loop
// nor the engine, and a link's writer sends pings and pongs ahead of the
// frames queued (activations, stats), so a busy link still answers in time.
// The reader records the pongs it reads in a table of its own that the loop
// steps as Heard before each Tick, never waiting on the loop's channel. Each
// reader and each writer has an OS thread of its own (runtime.LockOSThread),
// and on Linux raises that thread back to nice 0 where it may (CAP_SYS_NICE
// or RLIMIT_NICE: a serving runner lowers every thread to nice 10, and a
// nice-10 thread waits behind CPU burners). Go code also needs a P to run,
// and goroutines hashing a slice on every CPU would hold them all on
// nice-10 threads: the runner child runs with one P more than the CPUs
// (engine/runner's Main), free for the links. The engine and the slice
// hashing run on other goroutines (and cgo threads), so their page faults
// do not hold the reader. Memory is not locked: mlockall would lock the
// mapped weights too, and the reader's own working set is small and hot.
//
// A ping carries the time since the driver started (8 bytes) and "work";
// the pong to it carries that and then the answerer's sign of engine work
// (8 bytes): the CPU time, in ns, of the engine goroutine's OS thread (it
// is locked to one; ggml runs its first thread's share of a compute
// there), read from /proc on Linux, 0 elsewhere. The session counts its
// advance as progress, so a starved worker that computes is no stall
// (ring.Heard.Work). An 8-byte ping (an older driver's) gets its plain
// echo, and an older driver's echo of the 12-byte ping gives the round
// trip alone.
//
// A pong that finds the link's queue of pings and pongs full is dropped;
// the link stays. Pings pile up unread where a link is not read yet: a
// worker dials its successor when a plan arrives but reads that link only
// once its own windows are open, after a slice fetch that takes tens of
// seconds under load, while the successor pings it every tick from the
// start. Read in one burst, those pings once overflowed the queue and the
// link closed as a peer not reading its frames; a worker does not report
// its successor's link (the head watches every worker itself), so the
// head saw the successor idle and lost it as stalled a minute later
// (bench/ring.sh's loaded row, a false loss in most runs). A late pong
// tells its pinger nothing the next one does not, and a peer that really
// stops reading is found all the same: its frames fill the other queue
// (ErrBacklog, a lost peer), and its pinger hears no more pongs (silence).
//
// Actions that concern the caller (EmitToken, Ready, Replan, EndJob) are
// delivered on Out; the caller must keep reading it. On EndJob the driver
// also closes an Engine that implements Closer: a worker whose head is gone
// frees its windows without waiting for its caller.
//
// Job messages (wire.JobStart, JobAck, JobLink) arriving on a link go to
// OnJobMsg, never to the session. Workers report wire.DeviceStats to the
// head after each activation they send on (every round of every pass) and
// before acknowledging a plan: their measured compute time of decode passes
// and Measure's memory pressure and slice transfer; Stats returns what each
// device of the plan reported (the head's own compute included). On the
// head each report after the first of a plan is also a ring.Passed, with
// the compute time since the previous one: the progress that the
// session's stall detection counts (engine/ring, doc "Stalls").
//
// # Engine
//
// The Engine is an interface: engine/ring/ggmlengine implements it over
// engine/ggml (the windows of a model file or of a worker's slices), and
// the driver imports no engine.
//
// # Memory
//
// After Prepare (a worker's slice fetch) and when a job ends, the driver
// gives the Go heap's free memory back to the OS (debug.FreeOSMemory):
// memory pressure counts it, and the runtime would return it over minutes.
package driver
