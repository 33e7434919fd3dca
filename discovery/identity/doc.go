// Package identity holds what makes a Homering install a distinct, provable
// device: its key pair and self-signed certificate, the device ID derived from
// that certificate, the short pairing code, the SPAKE2 exchange that turns a
// code into mutual trust, and the persisted set of paired devices.
//
// # Model
//
// Each install creates, once, an ECDSA P-256 key and a self-signed X.509
// certificate in its config directory (key.pem and cert.pem, mode 0600 in a
// 0700 directory). The device ID is SHA-256 of the certificate's DER bytes,
// written as 52 base32 characters in four blocks of 13, each block followed by
// a Luhn mod 32 check character, grouped by seven with dashes (syncthing's
// form):
//
//	MFZWI3D-BONSGYC-YLTMRWG-C43ENR5-QXGZDMM-FZWI3DP-ONSGYC2-LTMRWGC
//
// The check characters catch a mistyped ID; the hash pins the exact
// certificate, so a device that keeps its ID keeps its key.
//
// # Pairing
//
// Two devices pair with a one-time code shown on the device that is to be
// trusted (the worker) and typed on the other (the head): eight random digits
// and a Luhn check digit, shown as 123-456-789. The check digit rejects typos
// locally, before the single attempt a code allows is spent.
//
// The code is never sent. Both sides run SPAKE2 (RFC 9382 shape) on P-256
// inside a TLS connection in which each side has presented its certificate:
//
//	A (head, entered the code)            B (worker, showed the code)
//	X = x·G + w·M      ── PakeA{X} ──►
//	                   ◄─ PakeB{Y, cB} ── Y = y·G + w·N
//	K = x·(Y − w·N)                       K = y·(X − w·M)
//	check cB           ── PakeConfirm{cA} ► check cA, pin A
//	pin B              ◄──── PairOK ─────
//
// w is derived from the code; M and N are points with unknown discrete logs,
// found by hashing fixed strings to the curve (try-and-increment, see
// hashToPoint). The transcript TT binds both device IDs as each side saw them
// in TLS, X, Y, K and w; cA and cB are HMACs over TT under keys derived from
// it. Only after a correct confirmation does a side pin the other's
// certificate hash in its paired set.
//
// # Threat model
//
// The adversary is another machine on the same LAN: it can browse and spoof
// mDNS, connect to any listening port, and sit in the middle of a connection
// (ARP or mDNS spoofing). It cannot read the code off the worker's screen and
// does not control either device's OS or config directory.
//
//   - A stranger connecting to a device is refused during the TLS handshake
//     unless its certificate hash is in the paired set, or a pairing window is
//     open on that device (then only the pairing messages are accepted).
//   - A man in the middle sees two different certificate pairs, so the two
//     transcripts differ and both confirmations fail: it cannot make either
//     side pin its certificate without knowing the code.
//   - Guessing the code: SPAKE2 gives an active attacker one guess per
//     protocol run and nothing to test guesses offline. The worker closes
//     its pairing window after the first attempt, right or wrong, and after
//     five minutes, so an attacker's chance is 1 in 10^8 per code shown.
//   - A copied config directory is a second device with the same key. It is
//     indistinguishable on the wire by design; discovery reports two
//     announcements of one device ID from different runs as a conflict, and
//     the fix is to delete the copy's identity (see homering doctor).
//   - Not covered: a compromised paired device (it is trusted until unpaired),
//     theft of key.pem by a local user with the same UID, and denial of
//     service (an attacker can burn a shown code by trying it once; the user
//     shows a new one).
//
// Unpairing removes the peer's hash from the local paired set and tells the
// other side over a link when it is reachable, so it forgets this device too.
// When it is not reachable it keeps its pin until it is unpaired there, but no
// link can form: this device refuses it and never dials it.
//
// DeviceID and its text forms live in the leaf package discovery/deviceid
// (DeviceID is an alias of deviceid.ID), which pure cores may import.
//
// The package is a leaf: stdlib only, no sockets, no goroutines. Randomness
// comes in as an io.Reader and time as a time.Time.
package identity
