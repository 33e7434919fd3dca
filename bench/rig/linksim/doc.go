// Command linksim is a userspace netem: an IP switch between network
// namespaces that delays, jitters and rate-limits every packet, for kernels
// without the netem qdisc (this project's CI VMs have no CONFIG_NET_SCH_NETEM).
//
// Usage:
//
//	linksim -delay 5ms -jitter 1ms -rate 300mbit -prefix 24 NS=10.78.1.1 NS2=10.78.1.2 ...
//
// For each NS=ADDR it opens a TUN device named lan0 inside the named network
// namespace (/var/run/netns/NS), gives it ADDR/prefix, brings it up with
// multicast on and routes everything (default route, multicast) through it.
// It prints "ready" on stdout once every device is up, and runs until
// SIGINT/SIGTERM; closing the TUN descriptors removes the devices.
//
// Model: each device has one uplink (as netem on the device's end of a
// veth). A packet read from device d's lan0 is serialised at -rate behind
// d's earlier packets, then arrives after -delay ± -jitter (uniform), at the
// earliest when d's previous packet arrived: packets of one uplink stay in
// order (netem with jitter would reorder them). At most -limit packets wait
// per uplink, as netem's default limit of 1000; more are dropped. Round trip
// between two devices: 2 × delay.
//
// Switching: IPv4 and IPv6 by destination address. Each device's source
// addresses are learned from its packets (its ADDR is known from the
// start); a multicast, broadcast or unknown destination goes to every other
// device, as a learning switch floods.
//
// Linux only (TUN devices and network namespaces): its files carry a linux
// build tag, so on other systems the package is this doc alone.
package main
