// Package envelope is the on-disk format of the checksummed JSON files
// Homering keeps beside its measurements: engine/profile's cached profiles
// and app's calibration ratios. A file is one JSON object of two fields,
//
//	{"sha256":"<hex>","<field>":<payload>}
//
// where <payload> is the JSON of the kept value and <hex> the lower-case hex
// SHA-256 of the payload's compact form (encoding/json.Compact). Hashing the
// compact form lets a person re-indent a file without breaking it, while any
// changed value, a torn write or a truncated file fails the check.
//
// <field> names what the payload is and is fixed per file kind ("profile"
// for a cached profile, "entry" for calibration ratios): these names were
// written before this package existed, so files already on users' machines
// keep loading. Seal writes the payload compact, byte for byte what those
// writers wrote.
//
// Open returns the payload only when the checksum matches; a file that is
// not such an object (no JSON, no "sha256" string, no <field>) is
// ErrMalformed, a mismatch ErrChecksum. What the payload means, and whether
// it is still current, is the caller's business. The package does no I/O:
// callers read the bytes and write them atomically (temp file + rename).
package envelope
