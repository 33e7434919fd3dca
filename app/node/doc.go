// Package node is the control plane of one device: its identity, the peer
// table fed by mDNS and manual adds, the paired set, pairing windows, and the
// contribute switch, which decides whether anything listens beyond loopback.
//
// # Model
//
// A Node owns one discovery.Table, one identity.Paired and one config.Config,
// all guarded by Node.mu. Run is the only long-lived goroutine owner:
//
//   - the mDNS browser runs always and feeds Observe/Goodbye into the table;
//   - a 250 ms tick expires table entries (the table itself never reads a clock);
//   - contributing is a config value; SetContribute saves it and wakes Run,
//     which reconciles: on → listen on the link port and advertise; off →
//     send an mDNS goodbye, stop advertising and close the listener.
//
// While contributing is off nothing of this device listens beyond loopback:
// the API is on 127.0.0.1 and browsing only joins the mDNS multicast group to
// receive answers (it never answers).
//
// # Trust
//
// Incoming links are authorised by the paired set during the TLS handshake
// (transport.Config.Authorize). A pairing window (ShowCode) additionally
// admits one unpaired connection that may only run the pairing exchange; the
// window closes after that one attempt, right or wrong, or after
// PairWindow. Unpair removes the peer locally and tells it over a link when it
// is reachable, so both sides forget each other.
//
// Watch streams events (peer joined/updated/left/conflict, contribute,
// paired, pair_failed, unpaired) for the tray and window; Status and Peers
// are snapshots to re-read after a gap.
//
// # Ring control (ring.go)
//
// A head asks a paired peer over a PurposeLink link, one exchange per link:
//
//	32 ProfileAsk (empty)      → 33 Profile  JSON PeerProfile{device, measured}
//	34 JobAsk JSON {model}     → 35 JobReady JSON {addr}
//
// or an Error frame with code 32 (CodeRingRefused) whose text says why in
// one sentence: no engine, contribute off, not paired, or the engine's own
// failure. The profile is the peer's cached measured one, or a default
// marked measured=false; the node names it by the device ID, so a plan's
// device names are device IDs. AskProfile also times the link (the fastest
// of three pings). A job makes the worker's engine serve (Worker.ServeRing)
// for the whole paired set until contributing stops; its answer is the
// engine's listen address, whose unspecified host the head replaces with the
// address it reached the device at. The engine itself ends a job whose head
// is gone (engine/runner).
//
// Errors returned to the API are facts (wrapped sentinels); the API turns
// them into one sentence for a person.
package node
