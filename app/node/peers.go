package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/discovery"
	"homering/engine/ring/transport"
)

// AddPeer adds a device by address (host, host:port or IP): the fallback when
// multicast does not reach it. The device's certificate tells its ID without
// pairing; a paired device also tells its name and version over a link. The
// address is kept in config.json and tried again at every start.
func (n *Node) AddPeer(ctx context.Context, addr string) (apitype.Peer, error) {
	n.mu.Lock()
	hp, ok := n.hostPortLocked(strings.TrimSpace(addr))
	n.mu.Unlock()
	if !ok {
		return apitype.Peer{}, fmt.Errorf("%q is not an address like 192.168.1.20 or 192.168.1.20:47470: %w", addr, ErrUnknownPeer)
	}
	ap, err := lookup(ctx, hp)
	if err != nil {
		return apitype.Peer{}, err
	}
	id, err := n.ep.Probe(ctx, ap.String())
	if err != nil {
		return apitype.Peer{}, err
	}
	if id == n.o.Identity.ID {
		return apitype.Peer{}, fmt.Errorf("%s: %w", ap, ErrSelf)
	}
	rec := discovery.Record{ID: id, Port: ap.Port()}
	n.mu.Lock()
	paired := n.paired.Has(id)
	n.mu.Unlock()
	if paired {
		if c, err := n.ep.Dial(ctx, ap.String(), id, transport.PurposeLink); err == nil {
			rec.Name, rec.App, rec.ProtoMin, rec.ProtoMax = c.Hello.Name, c.Hello.App, c.Hello.ProtoMin, c.Hello.ProtoMax
			// It answered a ring link, which a device serves only while it
			// contributes (startContributing): mDNS's TXT record is not the
			// only witness, and without this no device added by address
			// would ever be planned into a ring.
			rec.Contribute = true
			_ = c.Close()
		}
	}
	n.mu.Lock()
	evs := n.table.Observe(discovery.Sighting{Record: rec, Source: discovery.SourceManual, Iface: n.ifaceForLocked(ap.Addr()), Addrs: []netip.AddrPort{ap}}, n.o.Now())
	var saveErr error
	if !slices.Contains(n.cfg.ManualPeers, hp) {
		c := n.cfg
		c.ManualPeers = append(slices.Clone(c.ManualPeers), hp)
		if saveErr = config.Save(n.o.Dir, c); saveErr == nil {
			n.cfg = c
		}
	}
	n.mu.Unlock()
	n.logEvents(evs)
	if saveErr != nil {
		return apitype.Peer{}, saveErr
	}
	return n.peerView(id), nil
}

// RemovePeer drops a manual address and the table entry behind it.
func (n *Node) RemovePeer(peer string) error {
	id, _, err := n.resolve(peer)
	if err != nil {
		return err
	}
	n.mu.Lock()
	p, _ := n.table.Get(id)
	c := n.cfg
	c.ManualPeers = slices.DeleteFunc(slices.Clone(c.ManualPeers), func(s string) bool {
		for _, a := range p.Addrs {
			if s == a.String() || strings.HasPrefix(s, a.Addr().String()+":") {
				return true
			}
		}
		return false
	})
	err = config.Save(n.o.Dir, c)
	if err == nil {
		n.cfg = c
	}
	evs := n.table.Remove(id)
	n.mu.Unlock()
	n.logEvents(evs)
	return err
}

func lookup(ctx context.Context, hp string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(hp); err == nil {
		return ap, nil
	}
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return netip.AddrPort{}, err
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("node: look up %s: %w", host, err)
	}
	slices.SortStableFunc(ips, func(a, b netip.Addr) int {
		if a.Is4() == b.Is4() {
			return 0
		}
		if a.Is4() {
			return -1
		}
		return 1
	})
	return netip.ParseAddrPort(net.JoinHostPort(ips[0].Unmap().String(), port))
}

func (n *Node) ifaceForLocked(a netip.Addr) string {
	ifs, _ := n.o.Interfaces(n.cfg.Interface)
	for _, f := range ifs {
		for _, p := range f.Prefixes {
			if p.Contains(a.Unmap()) {
				return f.Name
			}
		}
	}
	return ""
}

// Probe tries a link to peer and says what happened and what might be wrong.
func (n *Node) Probe(ctx context.Context, peer string) apitype.Probe {
	r := apitype.Probe{Peer: peer, Tried: []string{}}
	id, addrs, err := n.resolve(peer)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	if len(addrs) == 0 {
		r.Error = ErrNoAddress.Error()
		r.Advice = append(r.Advice, "It is not visible now: it may be off, not contributing, or on a network multicast does not reach. Try: homering peers add ADDRESS.")
		return r
	}
	if id.IsZero() {
		// Only an address: learn who is there from its certificate, so the
		// link below is pinned like any other.
		seen, err := n.ep.Probe(ctx, addrs[0])
		if err != nil {
			r.Tried = append(r.Tried, addrs[0]+": "+err.Error())
			r.Error = err.Error()
			r.Advice = append(r.Advice, "Nothing answers TLS there: Homering is not running on it, contribute is off, or a firewall drops the port.")
			return r
		}
		r.Tried = append(r.Tried, fmt.Sprintf("%s: certificate of device %s", addrs[0], seen))
		id = seen
	}
	n.mu.Lock()
	paired := n.paired.Has(id)
	port := n.cfg.LinkPort
	n.mu.Unlock()
	if !paired {
		r.Advice = append(r.Advice, "This device is not paired with it, so it will refuse the link. Pair them: homering pair on it, then homering pair DEVICE CODE here.")
	}
	for _, a := range addrs {
		if ap, err := netip.ParseAddrPort(a); err == nil {
			n.mu.Lock()
			local := n.ifaceForLocked(ap.Addr())
			n.mu.Unlock()
			if local == "" && !ap.Addr().IsLinkLocalUnicast() {
				r.Advice = append(r.Advice, fmt.Sprintf("%s is on a different subnet than every interface used here: mDNS does not cross routers, so it is only found when added by address.", ap.Addr()))
			}
		}
	}
	c, err := n.dial(ctx, id, addrs, transport.PurposeLink, &r.Tried)
	if err != nil {
		r.Error = err.Error()
		var ve *transport.VersionError
		switch {
		case errors.Is(err, transport.ErrRefused):
			r.Advice = append(r.Advice, "The device answered but refused this one: they are not paired (or it unpaired this device).")
		case errors.Is(err, transport.ErrWrongDevice):
			r.Advice = append(r.Advice, "A different device answers at that address (the address changed hands, or someone is impersonating it).")
		case errors.As(err, &ve):
			r.Advice = append(r.Advice, ve.Error())
		case errors.Is(err, syscall.ECONNREFUSED):
			r.Advice = append(r.Advice, "Nothing listens there: Homering is not running on it, or contribute is off.")
		case errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "timeout"):
			r.Advice = append(r.Advice, fmt.Sprintf("No answer: a firewall may drop TCP port %d, or the device is off.", port))
		case strings.Contains(err.Error(), "no route") || strings.Contains(err.Error(), "unreachable"):
			r.Advice = append(r.Advice, "No route to that address from here: different network, or a VPN in between.")
		}
		return r
	}
	defer c.Close()
	r.Proto, r.App, r.Name = c.Proto, c.Hello.App, c.Hello.Name
	start := n.o.Now()
	if err := c.Send(transport.Frame{Type: transport.MsgPing, Payload: []byte("doctor")}); err == nil {
		if f, err := c.Recv(); err == nil && f.Type == transport.MsgPong {
			r.OK = true
			r.Tried = append(r.Tried, fmt.Sprintf("ping answered in %s", n.o.Now().Sub(start).Round(time.Microsecond)))
			return r
		}
	}
	r.Error = "the link came up but did not answer a ping"
	return r
}

// Doctor lists what discovery uses and what might hide a device.
func (n *Node) Doctor() apitype.Doctor {
	st := n.Status()
	var d apitype.Doctor
	add := func(name string, ok bool, f string, a ...any) {
		d.Checks = append(d.Checks, apitype.Check{Name: name, OK: ok, Detail: fmt.Sprintf(f, a...)})
	}
	add("identity", true, "device %s (%s), config in %s", st.Device.ID, st.Device.Name, st.ConfigDir)
	var used []string
	for _, i := range st.Interfaces {
		if i.Used {
			used = append(used, fmt.Sprintf("%s %v", i.Name, i.Addrs))
		} else {
			add("interface "+i.Name, true, "skipped: %s", i.Reason)
		}
	}
	add("interfaces", len(used) > 0, "used for mDNS: %s", orNone(used))
	ps := n.Peers()
	var mdnsSeen, manual, pairedHidden []string
	for _, p := range ps.Peers {
		switch {
		case slices.Contains(p.Sources, "mdns"):
			mdnsSeen = append(mdnsSeen, p.Name+" "+p.Short)
		case slices.Contains(p.Sources, "manual"):
			manual = append(manual, p.Name+" "+p.Short)
		case p.Paired:
			pairedHidden = append(pairedHidden, p.Name+" "+p.Short)
		}
	}
	if len(used) == 0 {
		add("multicast", false, "no interface can carry multicast: other devices cannot be found and cannot find this one; add them by address")
	} else {
		name, ok, detail := multicastCheck(multicastRoute(), mdnsSeen)
		add(name, ok, "%s", detail)
	}
	if st.Contribute {
		add("contribute", st.Listening != "", "on: listening on %s for paired devices; advertising %v. A firewall must allow TCP %s and UDP 5353.", orNone(nonEmpty(st.Listening)), st.Advertising, portOf(st.Listening))
	} else {
		add("contribute", true, "off: nothing listens beyond loopback, this device does not advertise; others cannot see it (it still sees them)")
	}
	add("seen by mDNS", true, "%s", orNone(mdnsSeen))
	add("added by address", true, "%s", orNone(manual))
	if len(pairedHidden) > 0 {
		add("paired but not visible", false, "%s: off, not contributing, on another subnet (mDNS does not cross routers), or UDP 5353 blocked; try homering doctor DEVICE or homering peers add ADDRESS", strings.Join(pairedHidden, ", "))
	}
	for _, c := range ps.SelfCopies {
		add("identity copy", false, "another device at %v runs with this device's ID: its config directory is a copy of this one", c.Addrs)
	}
	// Refusals are information, not a fault here: the other devices are
	// the ones misbehaving, and the line says which ways.
	add("refused", true, "%s", transport.FormatRefusals(st.Refused))
	for _, p := range st.Problems {
		add("problem", false, "%s %s %s", p.Title, p.Text, p.Fix)
	}
	return d
}

// multicastCheck is the doctor's multicast line from the kernel's answer
// for a route to the mDNS group and the devices mDNS has seen. The route
// is only a hint: mDNS sends on each interface by itself, so a device
// seen over mDNS proves it works, and the doctor does not report a failure
// it has just seen contradicted.
func multicastCheck(routeErr error, mdnsSeen []string) (name string, ok bool, detail string) {
	switch {
	case routeErr == nil:
		return "multicast route", true, "224.0.0.251 is routable"
	case len(mdnsSeen) > 0:
		return "multicast route", true, fmt.Sprintf("the kernel has no general route to 224.0.0.251 (%v), but mDNS works on this device's interfaces: it has seen %s", routeErr, strings.Join(mdnsSeen, ", "))
	}
	return "multicast route", false, fmt.Sprintf("no route to 224.0.0.251 (%v) and no device seen over mDNS: mDNS may not leave this machine; add devices by address", routeErr)
}

// multicastRoute asks the kernel for a route to the mDNS group.
func multicastRoute() error {
	c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(224, 0, 0, 251), Port: 5353})
	if err != nil {
		return err
	}
	return c.Close()
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func portOf(addr string) string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "?"
	}
	return p
}
