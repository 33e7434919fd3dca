// Package discovery is the pure half of finding devices: the TXT record
// codec that mDNS carries, and the peer table that turns sightings into a
// deduplicated list with Joined, Updated, Left and Conflict events.
//
// # TXT record, version 1
//
// An advertisement of service _homering._tcp carries these strings (RFC 6763
// key=value, each under 255 bytes):
//
//	v=1                      format version; bumped only when a key changes meaning
//	id=<52 base32 chars>     device ID, compact form (identity.DeviceID.Compact)
//	name=<text>              human name, at most 63 bytes
//	app=<version>            app version, e.g. 0.1.0
//	proto=<min>-<max>        link protocol range the device speaks
//	c=0|1                    contributing (a device only advertises while 1;
//	                         the key exists so a reader never has to guess)
//	port=<1-65535>           the link (transport) port
//	run=<hex>                random per process start; tells two processes that
//	                         claim one device ID apart (a copied config directory)
//
// Decoders ignore keys they do not know and reject records without id, port or
// a valid v, so version 2 may add keys freely.
//
// # Peer table
//
// The table holds one entry per device ID. Each entry is the union of its
// instances: one per (source, run) pair, each with the addresses and
// interfaces it was seen on, when it was first and last seen, and when it
// expires. Invariants:
//
//   - A device appears once however many interfaces, addresses or sources
//     report it (dedupe by device ID).
//   - An mDNS instance expires at last sighting + its record TTL; a goodbye
//     (TTL 0) removes it at once; a manual instance never expires and is
//     removed only by Remove.
//   - A device leaves (Left) when its last instance goes.
//   - Two mDNS instances of one device ID with different runs, each seen again
//     after the other first appeared, are a Conflict: two live processes share
//     one identity. A restart is not a conflict, because the old run is never
//     seen after the new one first appears. The same rule applied to this
//     device's own ID reports a copy of this device.
//   - Sightings of this device's own run are ignored (a device hears itself).
//
// The table never reads a clock, starts no goroutines and does no I/O: every
// method takes now, and events are returned, not sent.
package discovery
