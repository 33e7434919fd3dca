package mdns

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/grandcat/zeroconf"
	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"

	"homering/discovery"
	"homering/discovery/identity"
)

// Service is the DNS-SD service type.
const (
	Service = "_homering._tcp"
	Domain  = "local."
)

// ErrNoInterface means no interface is usable for multicast.
var ErrNoInterface = errors.New("mdns: no network interface can carry multicast (all are down, loopback, bridges or without IPv4)")

// InstanceName is the DNS-SD instance name of a record.
func InstanceName(r discovery.Record) string { return r.ID.Compact() + "-" + r.Run }

// parseInstance undoes InstanceName.
func parseInstance(s string) (identity.DeviceID, string, bool) {
	s = strings.ReplaceAll(s, `\`, "")
	idPart, run, ok := strings.Cut(s, "-")
	if !ok {
		return identity.DeviceID{}, "", false
	}
	id, err := identity.ParseDeviceID(idPart)
	return id, run, err == nil
}

// NewRun returns a random run tag (8 hex digits) from random bytes.
func NewRun(b [4]byte) string { return hex.EncodeToString(b[:]) }

// Advertiser answers queries for this device while it lives.
type Advertiser struct {
	srv *zeroconf.Server
}

// Advertise registers rec on the used interfaces with the given TTL.
func Advertise(rec discovery.Record, ifaces []Iface, ttl time.Duration) (*Advertiser, error) {
	nis := Used(ifaces)
	if len(nis) == 0 {
		return nil, ErrNoInterface // zeroconf would take every interface instead
	}
	var ips []string
	for _, f := range ifaces {
		if !f.Use {
			continue
		}
		for _, p := range f.Prefixes {
			if !p.Addr().IsLoopback() && (p.Addr().Is4() || !p.Addr().IsLinkLocalUnicast()) {
				ips = append(ips, p.Addr().String())
			}
		}
	}
	srv, err := zeroconf.RegisterProxy(InstanceName(rec), Service, Domain, int(rec.Port), "hr-"+rec.Run+".local.", ips, rec.EncodeTXT(), nis)
	if err != nil {
		return nil, fmt.Errorf("mdns: advertise: %w", err)
	}
	// zeroconf has no TTL option at registration; its probe goroutine reads
	// the field a little later (after a random 0-250 ms pause and the first
	// probe), so in practice the announcements carry this TTL.
	srv.TTL(uint32(max(ttl/time.Second, 1)))
	return &Advertiser{srv: srv}, nil
}

// Update replaces the TXT record and announces it.
func (a *Advertiser) Update(rec discovery.Record) { a.srv.SetText(rec.EncodeTXT()) }

// Stop sends a goodbye and closes the sockets.
func (a *Advertiser) Stop() { a.srv.Shutdown() }

// Browser finds advertisers. Fields are read once by Run.
type Browser struct {
	Interval time.Duration           // time between resolver starts; non-zero
	Ifaces   func() ([]Iface, error) // non-nil; re-read each round so new links are used
	Log      *slog.Logger            // non-nil
}

// Run browses until ctx ends. sight gets every answer, bye every goodbye;
// both are called from Run's goroutines, one call at a time.
func (b *Browser) Run(ctx context.Context, sight func(discovery.Sighting), bye func(identity.DeviceID, string)) error {
	var mu sync.Mutex // one callback at a time: the caller's table is not concurrent
	var wg sync.WaitGroup
	defer wg.Wait()

	wg.Add(1)
	go func() {
		defer wg.Done()
		b.listenGoodbyes(ctx, func(id identity.DeviceID, run string) {
			mu.Lock()
			defer mu.Unlock()
			bye(id, run)
		})
	}()

	t := time.NewTicker(b.Interval)
	defer t.Stop()
	for {
		ifaces, err := b.Ifaces()
		if err != nil {
			b.Log.Warn("mdns: choose interfaces", "err", err)
		}
		if nis := Used(ifaces); len(nis) > 0 {
			if r, err := zeroconf.NewResolver(zeroconf.SelectIfaces(nis), zeroconf.SelectIPTraffic(zeroconf.IPv4)); err != nil {
				b.Log.Warn("mdns: start resolver", "err", err)
			} else {
				rctx, cancel := context.WithTimeout(ctx, 2*b.Interval)
				entries := make(chan *zeroconf.ServiceEntry, 16)
				if err := r.Browse(rctx, Service, Domain, entries); err != nil {
					cancel()
					b.Log.Warn("mdns: browse", "err", err)
				} else {
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer cancel()
						for e := range entries { // closed by zeroconf when rctx ends
							s, err := toSighting(e, ifaces)
							if err != nil {
								b.Log.Debug("mdns: ignoring answer", "instance", e.Instance, "err", err)
								continue
							}
							mu.Lock()
							sight(s)
							mu.Unlock()
						}
					}()
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func toSighting(e *zeroconf.ServiceEntry, ifaces []Iface) (discovery.Sighting, error) {
	rec, err := discovery.DecodeTXT(e.Text)
	if err != nil {
		return discovery.Sighting{}, err
	}
	if e.Port > 0 && e.Port < 65536 {
		rec.Port = uint16(e.Port) // SRV is authoritative for the port
	}
	s := discovery.Sighting{Record: rec, Source: discovery.SourceMDNS, TTL: time.Duration(e.TTL) * time.Second}
	for _, ip := range append(append([]net.IP{}, e.AddrIPv4...), e.AddrIPv6...) {
		a, ok := netip.AddrFromSlice(ip)
		if !ok {
			continue
		}
		a = a.Unmap()
		name := ifaceFor(ifaces, a)
		if a.IsLinkLocalUnicast() {
			if name == "" {
				continue // unusable without a zone
			}
			a = a.WithZone(name)
		}
		if s.Iface == "" {
			s.Iface = name
		}
		s.Addrs = append(s.Addrs, netip.AddrPortFrom(a, rec.Port))
	}
	return s, nil
}

// listenGoodbyes watches the IPv4 mDNS group for TTL-0 PTR records of our
// service and reports them.
func (b *Browser) listenGoodbyes(ctx context.Context, bye func(identity.DeviceID, string)) {
	for ctx.Err() == nil {
		ifaces, _ := b.Ifaces()
		nis := Used(ifaces)
		if len(nis) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(b.Interval):
				continue
			}
		}
		if err := b.goodbyeRound(ctx, nis, bye); err != nil {
			b.Log.Warn("mdns: goodbye listener", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(b.Interval):
			}
		}
	}
}

// goodbyeRound listens on one set of interfaces for up to a minute, then
// returns so that a changed interface set is picked up.
func (b *Browser) goodbyeRound(ctx context.Context, nis []net.Interface, bye func(identity.DeviceID, string)) error {
	uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(224, 0, 0, 0), Port: 5353})
	if err != nil {
		return err
	}
	pc := ipv4.NewPacketConn(uc)
	defer pc.Close()
	joined := 0
	for i := range nis {
		if pc.JoinGroup(&nis[i], &net.UDPAddr{IP: net.IPv4(224, 0, 0, 251)}) == nil {
			joined++
		}
	}
	if joined == 0 {
		return fmt.Errorf("join 224.0.0.251 on %d interfaces failed", len(nis))
	}
	stop := context.AfterFunc(ctx, func() { _ = pc.Close() }) // unblocks ReadFrom
	defer stop()
	if err := pc.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		return err
	}
	want := Service + "." + Domain
	buf := make([]byte, 9000)
	for {
		n, _, _, err := pc.ReadFrom(buf)
		if err != nil {
			return nil // closed or deadline: next round
		}
		var m dns.Msg
		if m.Unpack(buf[:n]) != nil || !m.Response {
			continue
		}
		for _, rr := range m.Answer {
			if p, ok := rr.(*dns.PTR); ok && p.Hdr.Ttl == 0 && strings.EqualFold(p.Hdr.Name, want) {
				inst := strings.TrimSuffix(p.Ptr, "."+want)
				if id, run, ok := parseInstance(inst); ok {
					bye(id, run)
				}
			}
		}
	}
}
