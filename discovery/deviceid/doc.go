// Package deviceid is the device ID of Homering: the one type every layer
// uses for a device, from halda's plans and the ring's wire to the runner's
// protocol and the API. It holds only the value and its text forms, so that
// pure cores can import it; the key, the certificate the ID is the hash of
// and pairing stay in discovery/identity, whose DeviceID is this ID.
//
// # Model
//
// An ID is SHA-256 of a device's certificate (DER), 32 bytes; the zero value
// is no device. Its readable form (String, MarshalText) is syncthing's: 52
// base32 characters in four blocks of 13, each block followed by a Luhn mod
// 32 check character, grouped by seven with dashes:
//
//	MFZWI3D-BONSGYC-YLTMRWG-C43ENR5-QXGZDMM-FZWI3DP-ONSGYC2-LTMRWGC
//
// Compact is the 52 characters without check characters or dashes; Short
// is its first seven, for logs and tight screens (never for trust).
//
// # Invariants
//
// Parse accepts the readable form (check characters verified) or the
// compact one, in any case, with or without dashes and spaces; it rejects
// the zero ID and spellings whose unused trailing bits are set, so one
// device has exactly one ID string, and Parse(id.String()) == id for every
// non-zero id. Every wire, pipe and JSON document carries the readable form;
// in text (MarshalText, UnmarshalText) the zero ID is "", so a document that
// names no device reads back as written, and code that needs a device
// checks IsZero.
//
// The package is pure: standard library only, no I/O, no clock.
package deviceid
