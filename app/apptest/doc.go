// Package apptest is the end-to-end harness: it builds the real homering
// binary once per test binary, runs `homering headless` nodes in Linux network
// namespaces on a bridge, and drives them through the real CLI
// (`ip netns exec NS homering peers -json`, ...).
//
// # Topology
//
//	ns <p>-br:  bridge br0 (10.77.1.254/24) and router to 10.77.2.0/24 (10.77.2.254)
//	ns <p>-a, -b, ...: lan0 10.77.1.N/24 on br0, default route via .254
//	Remote nodes:      lan0 10.77.2.N/24 on a point-to-point veth to the
//	                   router, and only a route to 10.77.1.0/24: no default
//	                   route, so no multicast route; mDNS, which is
//	                   link-local, never crosses the router.
//
// <p> is "hr" plus random hex, unique per Env, so packages testing in
// parallel never share a name; interface names stay under 15 bytes.
// Addresses live inside the namespaces and cannot clash with anything.
// Cleanup (t.Cleanup) kills every node and deletes every namespace, which
// removes the veths and the bridge, even when the test fails.
//
// Tests need root (CI runs as root) and iproute2.
//
// Linux only (network namespaces, signals, Xvfb): its files carry a linux
// build tag, so on other systems the package is this doc alone.
package apptest
