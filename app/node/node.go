package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/app/problem"
	"homering/discovery"
	"homering/discovery/identity"
	"homering/discovery/mdns"
	"homering/engine/ring/transport"
)

// Link protocol range this build speaks: the one range of every frame a
// link carries (engine/ring/transport's registry).
const (
	ProtoMin = transport.ProtoMin
	ProtoMax = transport.ProtoMax
)

// PairWindow is how long a shown code stays valid.
const PairWindow = 5 * time.Minute

// Sentinels.
var (
	ErrNotContributing = errors.New("node: contribute is off, so this device accepts no connections; turn contribute on first")
	ErrUnknownPeer     = errors.New("node: no such device in the peer list or paired set")
	ErrAmbiguousPeer   = errors.New("node: that name matches more than one device; use the device ID")
	ErrNoAddress       = errors.New("node: no known address for that device; add it by address")
	ErrSelf            = errors.New("node: that address is this device")
	ErrNotPaired       = errors.New("node: that device is not paired")
)

// Options are what a Node needs from the composition root.
type Options struct {
	Dir        string             // config directory: config.json, paired.json
	Config     config.Config      // validated
	Identity   *identity.Identity // non-nil
	Paired     identity.Paired
	App        string // app version
	Hostname   string // default device name
	Log        *slog.Logger
	Now        func() time.Time
	Random     io.Reader                              // crypto/rand.Reader in production
	Run        string                                 // random per process; see discovery
	Interfaces func(pin string) ([]mdns.Iface, error) // nil: mdns.SystemInterfaces
}

// Node is one device's control plane. Methods are safe for concurrent use.
type Node struct {
	o       Options
	log     *slog.Logger
	ep      *transport.Endpoint
	changed chan struct{} // buffered 1: config changed, Run reconciles

	mu          sync.Mutex // guards everything below
	cfg         config.Config
	table       *discovery.Table
	paired      identity.Paired
	window      *pairWindow
	lastPair    *apitype.PairResult
	listening   string // link listener address; "" while not contributing
	linkPort    uint16 // its port, for the TXT record (config may say 0)
	advertising bool
	problems    map[string]apitype.Problem
	watchers    map[chan apitype.Event]struct{}
	worker      Worker // ring jobs (ring.go); nil refuses them
	// ctl holds the long-lived control link to each paired peer this
	// device asked something (ring.go control).
	ctl map[identity.DeviceID]*ctlLink
	// floodLogged is when an mDNS flood was last logged: once a minute
	// at most, so that a flood cannot fill the log.
	floodLogged time.Time
}

type pairWindow struct {
	code    identity.Code
	expires time.Time
}

// New builds a Node; Run starts it.
func New(o Options) *Node {
	if o.Interfaces == nil {
		o.Interfaces = mdns.SystemInterfaces
	}
	n := &Node{
		o: o, log: o.Log, cfg: o.Config, paired: o.Paired,
		table:    discovery.NewTable(o.Identity.ID, o.Run),
		changed:  make(chan struct{}, 1),
		problems: map[string]apitype.Problem{},
		ctl:      map[identity.DeviceID]*ctlLink{},
	}
	n.ep = transport.New(transport.Config{
		Identity:  o.Identity,
		Hello:     n.hello,
		Authorize: n.authorize,
		Log:       o.Log.With("component", "transport"),
		Timeout:   5 * time.Second,
		Refusals:  &transport.Refusals{},
	})
	return n
}

func (n *Node) name() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.nameLocked()
}

func (n *Node) nameLocked() string {
	if n.cfg.Name != "" {
		return n.cfg.Name
	}
	return n.o.Hostname
}

func (n *Node) hello() transport.Hello {
	return transport.Hello{ProtoMin: ProtoMin, ProtoMax: ProtoMax, App: n.o.App, Name: n.name()}
}

func (n *Node) authorize(id identity.DeviceID) transport.Decision {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.paired.Has(id):
		return transport.AllowLink
	case n.window != nil && n.o.Now().Before(n.window.expires):
		return transport.AllowPairing
	}
	return transport.Refuse
}

func (n *Node) record() discovery.Record {
	n.mu.Lock()
	defer n.mu.Unlock()
	return discovery.Record{
		Version: discovery.TXTVersion, ID: n.o.Identity.ID, Name: n.nameLocked(), App: n.o.App,
		ProtoMin: ProtoMin, ProtoMax: ProtoMax, Contribute: n.cfg.Contribute, Port: n.linkPort, Run: n.o.Run,
	}
}

// Run runs discovery and, while contributing, the link listener and the
// advertisement, until ctx ends. Shutdown is in reverse order of start.
func (n *Node) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	defer n.closeControls()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	n.mu.Lock()
	interval := n.cfg.BrowseInterval.D()
	n.mu.Unlock()
	b := &mdns.Browser{
		Interval: interval,
		Ifaces: func() ([]mdns.Iface, error) {
			n.mu.Lock()
			pin := n.cfg.Interface
			n.mu.Unlock()
			return n.o.Interfaces(pin)
		},
		Log: n.log.With("component", "mdns"),
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = b.Run(ctx, n.onSighting, n.onGoodbye)
	}()

	n.mu.Lock()
	manual := slices.Clone(n.cfg.ManualPeers)
	n.mu.Unlock()
	for _, addr := range manual {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := n.AddPeer(ctx, addr); err != nil {
				n.log.Info("manual peer not reachable now", "addr", addr, "err", err)
			}
		}()
	}

	var contrib *contribution
	defer func() {
		if contrib != nil {
			contrib.stop()
		}
	}()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	netCheck := time.NewTicker(5 * time.Second)
	defer netCheck.Stop()
	name := n.name()
	for {
		n.mu.Lock()
		want := n.cfg.Contribute
		n.mu.Unlock()
		switch {
		case want && contrib == nil:
			contrib = n.startContributing(ctx)
		case !want && contrib != nil:
			contrib.stop()
			contrib = nil
		case contrib != nil && n.name() != name:
			// The name is in the TXT record: register again. (zeroconf's
			// SetText would race with its responder goroutine.)
			contrib.fp = ""
			contrib.advertise()
		}
		name = n.name()
		select {
		case <-ctx.Done():
			return nil
		case <-n.changed:
		case <-tick.C:
			n.expire()
		case <-netCheck.C:
			if contrib != nil {
				contrib.advertise()
			}
		}
	}
}

// contribution is what runs while contributing: the link listener and the
// mDNS advertisement. Only Run's goroutine touches it.
type contribution struct {
	n      *Node
	cancel context.CancelFunc
	wg     sync.WaitGroup
	pin    string
	ttl    time.Duration
	adv    *mdns.Advertiser // nil when advertising failed
	fp     string           // interfaces and addresses adv was made for
}

// startContributing listens on the link port and advertises.
func (n *Node) startContributing(ctx context.Context) *contribution {
	n.mu.Lock()
	port, pin, ttl := n.cfg.LinkPort, n.cfg.Interface, n.cfg.MDNSTTL.D()
	n.mu.Unlock()
	sctx, cancel := context.WithCancel(ctx)
	c := &contribution{n: n, cancel: cancel, pin: pin, ttl: ttl}
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(port)))
	if err != nil {
		n.setProblem(problem.Make(problem.LinkPort, fmt.Sprintf("Port %d is in use or not allowed: %v.", port, err)))
		n.log.Error("link listener", "port", port, "err", err)
	} else {
		n.clearProblem(string(problem.LinkPort))
		n.mu.Lock()
		n.listening = ln.Addr().String()
		n.linkPort = uint16(ln.Addr().(*net.TCPAddr).Port)
		n.mu.Unlock()
		n.log.Info("listening for paired devices", "addr", ln.Addr().String())
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			if err := n.ep.Serve(sctx, ln, n.handleLink); err != nil {
				n.log.Error("link listener stopped", "err", err)
			}
		}()
	}
	c.advertise()
	return c
}

// advertise (re)registers the advertisement when the usable interfaces or
// their addresses changed since the last time: zeroconf fixes both at
// registration, and a laptop changes networks.
func (c *contribution) advertise() {
	n := c.n
	ifaces, err := n.o.Interfaces(c.pin)
	fp := fmt.Sprint(err)
	for _, f := range ifaces {
		if f.Use {
			fp += fmt.Sprint(f.Name, f.Prefixes)
		}
	}
	if fp == c.fp {
		return
	}
	if c.adv != nil {
		c.adv.Stop()
		c.adv = nil
		n.log.Info("network changed: advertising again")
	}
	c.fp = fp
	if err == nil {
		c.adv, err = mdns.Advertise(n.record(), ifaces, c.ttl)
	}
	if err != nil {
		n.setProblem(problem.Make(problem.Advertise, fmt.Sprintf("mDNS advertising failed: %v.", err)))
		n.log.Warn("mdns advertise", "err", err)
	} else {
		n.clearProblem(string(problem.Advertise))
		n.log.Info("advertising", "service", mdns.Service, "ttl", c.ttl)
	}
	n.mu.Lock()
	n.advertising = c.adv != nil
	n.mu.Unlock()
}

// stop sends the goodbye first, so peers drop this device before its port
// closes, then closes the listener and every link.
func (c *contribution) stop() {
	if c.adv != nil {
		c.adv.Stop()
	}
	c.cancel()
	c.wg.Wait()
	c.n.mu.Lock()
	c.n.listening, c.n.advertising = "", false
	c.n.mu.Unlock()
	c.n.log.Info("stopped contributing: no longer listening or advertising")
}

func (n *Node) onSighting(s discovery.Sighting) {
	n.mu.Lock()
	now := n.o.Now()
	before := n.table.Flooded()
	evs := n.table.Observe(s, now)
	flooded := n.table.Flooded() - before
	logFlood := flooded > 0 && now.Sub(n.floodLogged) >= time.Minute
	if logFlood {
		n.floodLogged = now
	}
	n.mu.Unlock()
	for range flooded {
		n.ep.Refusals().Add(transport.RefusedMDNSFlood)
	}
	if logFlood {
		n.log.Warn("mDNS announcements past the peer table's bounds dropped (logged once a minute): something on this network announces invented devices", "from", s.Addrs, "name", s.Record.Name)
	}
	if flooded > 0 {
		// A flood's comings and goings are counted and logged once a
		// minute above, not each one: the UI still hears of them.
		n.publishEvents(evs)
		return
	}
	n.logEvents(evs)
}

func (n *Node) onGoodbye(id identity.DeviceID, run string) {
	n.mu.Lock()
	evs := n.table.Goodbye(id, run, n.o.Now())
	n.mu.Unlock()
	n.logEvents(evs)
}

func (n *Node) expire() {
	n.mu.Lock()
	evs := n.table.Expire(n.o.Now())
	n.mu.Unlock()
	n.logEvents(evs)
}

// publishEvents tells the UI's watchers of evs without logging them.
func (n *Node) publishEvents(evs []discovery.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, e := range evs {
		view := n.peerLocked(e.Peer)
		n.publishLocked(apitype.Event{Kind: eventKind(e), Peer: &view, Reason: e.Reason})
	}
}

func (n *Node) logEvents(evs []discovery.Event) {
	n.publishEvents(evs)
	for _, e := range evs {
		p := e.Peer
		attrs := []any{"peer", p.Record.ID, "name", p.Record.Name, "addrs", fmt.Sprint(p.Addrs), "ifaces", p.Ifaces, "reason", e.Reason}
		switch {
		case e.Kind == discovery.Conflict && e.Self:
			n.setProblem(problem.Make(problem.SelfCopy,
				fmt.Sprintf("A device at %v announces device ID %s too. Its config directory was probably copied from this one.", p.Addrs, p.Record.ID.Short())))
			n.log.Error("another device runs with this device's identity", attrs...)
		case e.Kind == discovery.Conflict:
			n.setProblem(problem.Make(problem.PeerCopy,
				fmt.Sprintf("Two running devices (%v) announce device ID %s. One has a copied config directory.", p.Addrs, p.Record.ID.Short()),
				p.Record.ID.Compact()))
			n.log.Error("two devices share one device ID", attrs...)
		default:
			n.log.Info("peer "+e.Kind.String(), attrs...)
		}
	}
}

func (n *Node) setProblem(p apitype.Problem) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.problems[p.Code] = p
}

func (n *Node) clearProblem(code string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.problems, code)
}

// SetContribute turns contributing on or off: a saved config change that Run
// applies.
func (n *Node) SetContribute(on bool) error {
	n.mu.Lock()
	c := n.cfg
	c.Contribute = on
	if err := config.Save(n.o.Dir, c); err != nil {
		n.mu.Unlock()
		return err
	}
	n.cfg = c
	// Logged before Run can act on it: tests time the reaction from here.
	n.log.Info("contribute set", "on", on)
	n.publishLocked(apitype.Event{Kind: "contribute", On: &on})
	n.mu.Unlock()
	n.wake()
	return nil
}

func (n *Node) wake() {
	select {
	case n.changed <- struct{}{}:
	default:
	}
}

// CountRefusals adds what this device's engine refused on the ring's links
// (the runner child's own listener and links: engine/runner's EvRefused)
// to the node's counts, so status and doctor show one set. The engine
// logged each already.
func (n *Node) CountRefusals(m map[string]uint64) { n.ep.Refusals().AddCounts(m) }

// Status is a snapshot for the API.
func (n *Node) Status() apitype.Status {
	n.mu.Lock()
	pin := n.cfg.Interface
	n.mu.Unlock()
	ifaces, ifErr := n.o.Interfaces(pin)
	n.mu.Lock()
	defer n.mu.Unlock()
	s := apitype.Status{
		Device:      n.deviceLocked(),
		Contribute:  n.cfg.Contribute,
		Listening:   n.listening,
		Advertising: n.advertising,
		ConfigDir:   n.o.Dir,
		Pairing:     n.pairStatusLocked(),
		Problems:    []apitype.Problem{},
		Refused:     n.ep.Refusals().Snapshot(),
	}
	for _, f := range ifaces {
		i := apitype.Interface{Name: f.Name, Used: f.Use, Reason: f.Reason}
		for _, p := range f.Prefixes {
			i.Addrs = append(i.Addrs, p.String())
		}
		s.Interfaces = append(s.Interfaces, i)
	}
	if ifErr != nil {
		s.Problems = append(s.Problems, problem.Make(problem.Interface, problem.Sentence(ifErr.Error())))
	}
	for _, code := range sortedKeys(n.problems) {
		s.Problems = append(s.Problems, n.problems[code])
	}
	return s
}

func sortedKeys(m map[string]apitype.Problem) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (n *Node) deviceLocked() apitype.Device {
	id := n.o.Identity.ID
	return apitype.Device{ID: id, Short: id.Short(), Name: n.nameLocked(), App: n.o.App, ProtoMin: ProtoMin, ProtoMax: ProtoMax}
}

// Peers lists every device seen, plus paired devices not seen now.
func (n *Node) Peers() apitype.Peers {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := apitype.Peers{Peers: []apitype.Peer{}, SelfCopies: []apitype.Peer{}}
	seen := map[identity.DeviceID]bool{}
	for _, p := range n.table.Peers() {
		seen[p.Record.ID] = true
		out.Peers = append(out.Peers, n.peerLocked(p))
	}
	for _, d := range n.paired.Devices {
		if !seen[d.ID] {
			out.Peers = append(out.Peers, n.peerLocked(discovery.Peer{Record: discovery.Record{ID: d.ID, Name: d.Name}}))
		}
	}
	for _, p := range n.table.SelfConflict() {
		out.SelfCopies = append(out.SelfCopies, n.peerLocked(p))
	}
	return out
}

func (n *Node) peerLocked(p discovery.Peer) apitype.Peer {
	id := p.Record.ID
	a := apitype.Peer{
		ID: id, Short: id.Short(), Name: p.Record.Name, App: p.Record.App,
		ProtoMin: p.Record.ProtoMin, ProtoMax: p.Record.ProtoMax, Contribute: p.Record.Contribute,
		Visible: len(p.Sources) > 0, Sources: []string{}, Interfaces: p.Ifaces, Addrs: []string{}, Conflict: p.Conflict,
	}
	if a.Interfaces == nil {
		a.Interfaces = []string{}
	}
	for _, s := range p.Sources {
		a.Sources = append(a.Sources, s.String())
	}
	for _, ad := range p.Addrs {
		a.Addrs = append(a.Addrs, ad.String())
	}
	if !p.FirstSeen.IsZero() {
		a.FirstSeen, a.LastSeen = ptr(p.FirstSeen), ptr(p.LastSeen)
	}
	if !p.Expires.IsZero() {
		a.Expires = ptr(p.Expires)
	}
	if d, ok := n.paired.Get(id); ok {
		a.Paired, a.PairedAt = true, ptr(d.PairedAt)
		if a.Name == "" {
			a.Name = d.Name
		}
	}
	return a
}

func ptr[T any](v T) *T { return &v }

// resolve finds a peer by ID (any form), short ID or name, or takes a
// host[:port]. It returns the expected ID (zero when only an address is
// known) and addresses to try.
func (n *Node) resolve(s string) (identity.DeviceID, []string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if id, err := identity.ParseDeviceID(s); err == nil {
		return id, n.addrsLocked(id), nil
	}
	var matches []identity.DeviceID
	for _, p := range n.table.Peers() {
		if strings.EqualFold(p.Record.ID.Short(), s) || (p.Record.Name != "" && strings.EqualFold(p.Record.Name, s)) {
			matches = append(matches, p.Record.ID)
		}
	}
	for _, d := range n.paired.Devices {
		if (strings.EqualFold(d.ID.Short(), s) || strings.EqualFold(d.Name, s)) && !slices.Contains(matches, d.ID) {
			matches = append(matches, d.ID)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], n.addrsLocked(matches[0]), nil
	case 0:
	default:
		return identity.DeviceID{}, nil, fmt.Errorf("%w: %q", ErrAmbiguousPeer, s)
	}
	if addr, ok := n.hostPortLocked(s); ok {
		return identity.DeviceID{}, []string{addr}, nil
	}
	return identity.DeviceID{}, nil, fmt.Errorf("%w: %q", ErrUnknownPeer, s)
}

func (n *Node) hostPortLocked(s string) (string, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.String(), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.AddrPortFrom(a, uint16(n.cfg.LinkPort)).String(), true
	}
	if h, p, err := net.SplitHostPort(s); err == nil && h != "" && p != "" {
		return s, true
	}
	if s != "" && !strings.ContainsAny(s, " /") && strings.Contains(s, ".") {
		return net.JoinHostPort(s, strconv.Itoa(n.cfg.LinkPort)), true
	}
	return "", false
}

// addrsLocked orders a peer's addresses: IPv4 first, then IPv6.
func (n *Node) addrsLocked(id identity.DeviceID) []string {
	p, ok := n.table.Get(id)
	if !ok {
		return nil
	}
	as := slices.Clone(p.Addrs)
	slices.SortStableFunc(as, func(a, b netip.AddrPort) int {
		if a.Addr().Is4() == b.Addr().Is4() {
			return 0
		}
		if a.Addr().Is4() {
			return -1
		}
		return 1
	})
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	return out
}

// dial tries addrs in order until a link is up.
func (n *Node) dial(ctx context.Context, expect identity.DeviceID, addrs []string, purpose transport.Purpose, tried *[]string) (*transport.Conn, error) {
	if len(addrs) == 0 {
		return nil, ErrNoAddress
	}
	var errs []error
	for _, a := range addrs {
		c, err := n.ep.Dial(ctx, a, expect, purpose)
		if err == nil {
			if tried != nil {
				*tried = append(*tried, a+": link up")
			}
			return c, nil
		}
		if tried != nil {
			*tried = append(*tried, a+": "+err.Error())
		}
		errs = append(errs, err)
		if errors.Is(err, transport.ErrRefused) || errors.Is(err, transport.ErrWrongDevice) {
			break // the device answered: other addresses reach the same answer
		}
	}
	return nil, errors.Join(errs...)
}

// handleLink serves one accepted connection.
func (n *Node) handleLink(ctx context.Context, c *transport.Conn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	log := n.log.With("peer", c.Peer, "addr", c.Remote)
	if c.Hello.Purpose == transport.PurposePair {
		n.servePairing(c, log)
		return
	}
	log.Info("link up", "name", c.Hello.Name, "app", c.Hello.App, "proto", c.Proto)
	for {
		f, err := c.Recv()
		if errors.Is(err, transport.ErrFrameTooBig) {
			n.ep.Refusals().Add(transport.RefusedFrameSize)
			log.Warn("dropped a link whose frame is larger than the limit", "err", err)
			return
		}
		if err != nil {
			log.Debug("link closed", "err", err)
			return
		}
		switch f.Type {
		case transport.MsgPing:
			_ = c.Send(transport.Frame{Type: transport.MsgPong, Payload: f.Payload})
		case transport.MsgUnpair:
			n.mu.Lock()
			removed := n.paired.Remove(c.Peer)
			err := identity.SavePaired(n.o.Dir, n.paired)
			if removed {
				n.publishLocked(apitype.Event{Kind: "unpaired", Peer: &apitype.Peer{ID: c.Peer, Short: c.Peer.Short(), Name: c.Hello.Name}, Reason: "the other device unpaired"})
			}
			n.mu.Unlock()
			if err != nil {
				log.Error("save paired set", "err", err)
			}
			if removed {
				log.Info("the other device unpaired; unpaired here too")
			}
			n.closeControl(c.Peer)
			return
		default:
			if !n.serveRingControl(ctx, c, f) { // ring.go
				// Ring frames travel on the engine's own links, never here.
				n.ep.Refusals().Add(transport.RefusedFrameType)
				log.Warn("dropped a frame this link does not carry", "type", f.Type, "bytes", len(f.Payload))
			}
		}
	}
}
