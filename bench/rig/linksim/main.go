//go:build linux

package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "linksim:", err)
		os.Exit(1)
	}
}

type config struct {
	delay, jitter time.Duration
	bitsPerSec    float64
	limit         int
	prefix        int
	mtu           int
}

func run(args []string) error {
	fs := flag.NewFlagSet("linksim", flag.ContinueOnError)
	delay := fs.Duration("delay", 5*time.Millisecond, "one-way delay of each uplink")
	jitter := fs.Duration("jitter", time.Millisecond, "uniform jitter ± around the delay")
	rate := fs.String("rate", "300mbit", "uplink rate: N, Nkbit, Nmbit or Ngbit (bits per second)")
	limit := fs.Int("limit", 1000, "packets waiting per uplink before drops")
	prefix := fs.Int("prefix", 24, "prefix length of the devices' subnet")
	mtu := fs.Int("mtu", 1500, "MTU of the lan0 devices")
	if err := fs.Parse(args); err != nil {
		return err
	}
	bps, err := parseRate(*rate)
	if err != nil {
		return err
	}
	c := config{delay: *delay, jitter: *jitter, bitsPerSec: bps, limit: *limit, prefix: *prefix, mtu: *mtu}
	if c.jitter > c.delay || c.limit < 1 || fs.NArg() < 2 {
		return fmt.Errorf("need at least two NS=ADDR arguments, jitter ≤ delay and limit ≥ 1")
	}

	sw := &switchboard{learned: map[netip.Addr]int{}}
	for i, a := range fs.Args() {
		ns, addrText, ok := strings.Cut(a, "=")
		addr, err := netip.ParseAddr(addrText)
		if !ok || err != nil {
			return fmt.Errorf("argument %q: want NS=ADDR", a)
		}
		f, err := openTUN(ns, "lan0")
		if err != nil {
			return err
		}
		defer f.Close()
		if err := configure(ns, addr, c); err != nil {
			return err
		}
		p := &port{name: ns, f: f, queue: make(chan packet, c.limit), rng: rand.New(rand.NewPCG(uint64(i+1), 0x11ca1))}
		sw.ports = append(sw.ports, p)
		sw.learned[addr] = i
	}
	for i, p := range sw.ports {
		go sw.read(i, p, c)
		go sw.deliver(p)
	}
	fmt.Printf("ready: %d devices, delay %s ± %s, %s per uplink\n", len(sw.ports), c.delay, c.jitter, *rate)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	return nil
}

func parseRate(s string) (float64, error) {
	mult := 1.0
	for _, u := range []struct {
		suffix string
		m      float64
	}{{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.m
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("rate %q: want a positive number of bits per second such as 300mbit", s)
	}
	return v * mult, nil
}

// openTUN creates TUN device name inside network namespace ns. The
// descriptor works from any namespace once created.
func openTUN(ns, name string) (*os.File, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = unix.Close(orig) }() // a namespace handle opened read-only
	target, err := unix.Open("/var/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("network namespace %s: %w (create it with ip netns add)", ns, err)
	}
	defer func() { _ = unix.Close(target) }() // a namespace handle opened read-only
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("enter network namespace %s: %w", ns, err)
	}
	// Back to the original namespace before this thread runs anything else.
	defer func() {
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			panic(fmt.Sprintf("linksim: cannot return to the original network namespace: %v", err))
		}
	}()
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		_ = unix.Close(fd) // the error to report is this function's
		return nil, err
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		_ = unix.Close(fd) // the error to report is this function's
		return nil, fmt.Errorf("create TUN %s in %s: %w", name, ns, err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd) // the error to report is this function's
		return nil, err
	}
	return os.NewFile(uintptr(fd), ns+"/"+name), nil
}

func configure(ns string, addr netip.Addr, c config) error {
	cmds := [][]string{
		{"link", "set", "lo", "up"},
		{"link", "set", "lan0", "mtu", strconv.Itoa(c.mtu), "multicast", "on", "up"},
		{"addr", "add", fmt.Sprintf("%s/%d", addr, c.prefix), "dev", "lan0"},
		{"route", "add", "default", "dev", "lan0"},
		{"route", "add", "224.0.0.0/4", "dev", "lan0"},
	}
	for _, a := range cmds {
		if out, err := exec.Command("ip", append([]string{"-n", ns}, a...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip -n %s %s: %v: %s", ns, strings.Join(a, " "), err, out)
		}
	}
	return nil
}

type packet struct {
	data []byte
	due  time.Time
	to   []*port
}

type port struct {
	name  string
	f     *os.File
	queue chan packet
	rng   *rand.Rand // only the port's reader uses it

	// reader state: when the uplink is free again, when its last packet arrives
	busyUntil, lastDue time.Time
	dropped            int
}

type switchboard struct {
	ports   []*port
	mu      sync.Mutex
	learned map[netip.Addr]int
}

func (s *switchboard) read(i int, p *port, c config) {
	for {
		buf := make([]byte, 65536)
		n, err := p.f.Read(buf)
		if err != nil {
			return // the device is gone (shutdown)
		}
		src, dst, ok := addrs(buf[:n])
		if !ok {
			continue
		}
		to := s.route(i, src, dst)
		if len(to) == 0 {
			continue
		}
		now := time.Now()
		if p.busyUntil.Before(now) {
			p.busyUntil = now
		}
		p.busyUntil = p.busyUntil.Add(time.Duration(float64(n*8) / c.bitsPerSec * 1e9))
		due := p.busyUntil.Add(c.delay)
		if c.jitter > 0 {
			due = due.Add(time.Duration(p.rng.Int64N(int64(2*c.jitter)+1)) - c.jitter)
		}
		if due.Before(p.lastDue) {
			due = p.lastDue
		}
		select {
		case p.queue <- packet{data: buf[:n], due: due, to: to}:
			p.lastDue = due
		default:
			p.dropped++ // queue full: tail drop, as netem past its limit
		}
	}
}

func (s *switchboard) deliver(p *port) {
	for pk := range p.queue {
		if d := time.Until(pk.due); d > 0 {
			time.Sleep(d) // this is the emulated link's delay
		}
		for _, q := range pk.to {
			_, _ = q.f.Write(pk.data) // a full or gone device drops the packet, as a link would
		}
	}
}

// route learns src on port i and returns where dst goes.
func (s *switchboard) route(i int, src, dst netip.Addr) []*port {
	s.mu.Lock()
	defer s.mu.Unlock()
	if src.IsValid() && !src.IsUnspecified() {
		s.learned[src] = i
	}
	if !dst.IsMulticast() {
		if j, ok := s.learned[dst]; ok {
			if j == i {
				return nil
			}
			return []*port{s.ports[j]}
		}
	}
	var all []*port
	for j, q := range s.ports {
		if j != i {
			all = append(all, q)
		}
	}
	return all
}

// addrs reads the source and destination of an IPv4 or IPv6 packet.
func addrs(b []byte) (src, dst netip.Addr, ok bool) {
	if len(b) < 1 {
		return src, dst, false
	}
	switch b[0] >> 4 {
	case 4:
		if len(b) < 20 {
			return src, dst, false
		}
		return netip.AddrFrom4([4]byte(b[12:16])), netip.AddrFrom4([4]byte(b[16:20])), true
	case 6:
		if len(b) < 40 {
			return src, dst, false
		}
		return netip.AddrFrom16([16]byte(b[8:24])), netip.AddrFrom16([16]byte(b[24:40])), true
	}
	return src, dst, false
}
