// Package mdns advertises and browses Homering devices with multicast DNS
// (github.com/grandcat/zeroconf), turning what it hears into
// discovery.Sightings and goodbyes for the peer table.
//
// # Service
//
// Service type _homering._tcp in domain local. The instance name is
// "<device ID, compact>-<run>" (61 bytes, under DNS's 63), so a goodbye,
// which carries only the instance name, still says which device and which
// run left. The host name is hr-<run>.local., unique per process, because
// machines cloned from one image (and network namespaces sharing a UTS
// namespace) share an OS host name. The TXT record is discovery.Record.
//
// # Timing
//
// grandcat's browser reports an instance once per resolver and never reports
// removals, and its re-queries back off to a minute. So Browser runs rolling
// resolvers: a new one every Interval, each living two intervals, each
// starting with a query that every advertiser answers. Every answer is a
// fresh sighting. Advertisements carry a short TTL (6 s by default, see
// app/config): a device killed without a goodbye drops out of the table at
// most TTL after the last answer it gave, and with Interval 2 s it has three
// chances to be heard before that. A device that stops advertising sends a
// goodbye (TTL 0); grandcat's browser drops those silently, so Browser also
// listens to the mDNS group itself for goodbyes of _homering._tcp and reports
// them at once.
//
// # Interfaces
//
// ChooseInterfaces keeps interfaces that are up, multicast-capable, not
// loopback and not container or VM bridges (docker*, br-*, veth*, virbr*,
// cni*, flannel*), and says why it skipped each other one. A pinned interface
// replaces that choice. The interface a peer was seen on is the chosen
// interface whose subnet holds the peer's address: the kernel delivers
// multicast to every socket in the group (IP_MULTICAST_ALL), so the socket
// cannot tell.
//
// # Sockets
//
// Browsing binds UDP 224.0.0.0:5353 (SO_REUSEADDR) and only receives; it
// never answers. Advertising (only while contributing) binds the same group
// port for IPv4 and IPv6 and answers queries.
package mdns
