// Package transport carries framed messages between paired devices: mutual
// TLS (each side presents its self-signed certificate, see
// discovery/identity), a websocket (gorilla/websocket) on top so links pass
// through anything that passes HTTPS, and a minimal length-prefixed frame
// format inside the websocket's binary messages.
//
// # Trust
//
// A certificate is trusted when its SHA-256 (the device ID) is in the paired
// set, asked through Config.Authorize during the TLS handshake:
//
//   - server side: GetConfigForClient builds a per-connection tls.Config whose
//     VerifyPeerCertificate refuses unknown certificates, so an unpaired peer
//     is cut off by a TLS alert before the server reads a single byte of
//     application data; the refusal is logged with the peer's address.
//   - client side: the server's certificate must hash to the device ID the
//     caller expects (the pin). Only pairing and "who is at this address"
//     probes dial with no expectation, and they get the ID back to check.
//
// A device with an open pairing window also accepts unknown certificates, but
// such a connection may only carry the pairing frames (16-19); anything else
// closes it.
//
// # Frames
//
// Every frame is
//
//	length  uint32, big endian: bytes that follow (type + payload), ≥ 1
//	type    uint8 (MsgType)
//	payload length−1 bytes
//
// length is checked against a maximum before anything is allocated. The
// websocket is used as a byte stream: a frame may span binary messages, so the
// same code runs over net.Pipe in tests and over any io.ReadWriter.
//
// Types are stable numbers, appended only:
//
//	1 Hello        first frame in each direction (below)
//	2 Error        code uint16, then UTF-8 text
//	3 Ping, 4 Pong payload echoed
//	5 Unpair       the sender removed the receiver from its paired set
//	16 PakeA, 17 PakeB, 18 PakeConfirm, 19 PairOK   pairing (identity.Pake)
//	32-47          app/node ring control (profile and job requests; app/node/ring.go)
//	64-255         reserved for engine/ring/wire
//
// # Hello
//
//	protoMin uint16, protoMax uint16, purpose uint8 (1 link, 2 pair, 3 slice),
//	appLen uint8, app, nameLen uint8, name
//
// The client sends its Hello first and the server answers with its own, so the
// exchange cannot deadlock on an unbuffered pipe. Both pick the highest
// protocol in the intersection of the two ranges; an empty intersection is a
// *VersionError that names both app versions and says which device to update.
package transport
