// Package ringtest is an in-memory multi-device ring for engine/ring's
// scripts (engine/ring/testdata/*.txt), in the style of etcd-io/raft's
// rafttest.InteractionEnv and its datadriven files.
//
// Env holds one ring.Session per device, joined by perfect ordered links
// that pass every message through the wire codec, a fake compute (an
// order-sensitive map per layer, so a token shows whether every layer ran
// once and in order; Reference computes the same on one device), and a
// tick counter that also answers pings on every live link (Heard before
// each device's Tick, as the driver steps queued events before a tick). Every action a
// session returns is printed one per line ("a->b Activation …",
// "b: Compute …"), so a script's expected output is the protocol trace.
//
// Commands: devices IDS [tick=MS]; plan id=N k=K DEV=a-b,c-d … [release=IDS]
// [nembd=N] (first device is the head); token IDS [pos=N] [batch=N] (a
// pipelined pass of micro-batches of N rows) [verify] (a speculative
// verification: StartToken.Verify) [stream=N] (the conversation:
// StartToken.Stream; each stream's token is checked against its own
// reference); tick [N];
// slow DEV=TICKS; rtt DEV=MS; fail-prepare DEV TEXT; drop DEV [close];
// stall DEV=TICKS (stopped: answers, hears and ticks nothing, frames to
// it wait; then its first tick is late); tick [N] late=DEVS (those read no
// answer before a tick 3 periods after the previous one); dup A->B; capture A->B; hold A->B [Kind] (the next frame, of a kind
// such as Commit, waits for replay; Kind Passed: worker A's next report to
// head B); replay; inject A->B seq=N r=N [layers=a-b]
// [nembd=N] [plan=N]; join DEV candidate=MS current=MS; done; state; silence (each
// watched peer's silence and limit, in ticks); seed DEV PEER=TICKS… (silences
// earlier jobs saw PEER end: Session.Seed); gaps (what each session would
// hand on: Session.Gaps).
//
// RunFile parses the format (command line, "----", expected output up to a
// blank line; '#' comments) with the standard library and rewrites the
// expected outputs in place when asked (-rewrite).
package ringtest
