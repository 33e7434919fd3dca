package node

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"homering/app/config"
	"homering/discovery/identity"
	"homering/discovery/mdns"
	"homering/engine/ring/transport"
	"homering/internal/testlog"
	"homering/internal/testwait"
)

// testNode runs a Node on loopback with a free link port. mDNS is off (no
// interface is offered); the real mDNS path is tested in app/apptest.
func testNode(t *testing.T, name string, contribute bool) *Node {
	t.Helper()
	return testNodeLog(t, name, contribute, nil)
}

// testNodeLog is testNode that also logs to also (when non-nil).
func testNodeLog(t *testing.T, name string, contribute bool, also io.Writer) *Node {
	t.Helper()
	var w io.Writer = testlog.Writer(t)
	if also != nil {
		w = io.MultiWriter(w, also)
	}
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Name, cfg.LinkPort, cfg.Contribute = name, 0, contribute
	id, err := identity.LoadOrCreate(dir, time.Now(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	n := New(Options{
		Dir: dir, Config: cfg, Identity: id, App: "0.1.0-test", Hostname: "host",
		Log: slog.New(slog.NewTextHandler(w, nil)).With("node", name), Now: time.Now,
		Random: rand.Reader, Run: name, Interfaces: func(string) ([]mdns.Iface, error) { return nil, nil },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	if contribute {
		testwait.True(t, 5*time.Second, "the node's state", func() bool { return n.Status().Listening != "" })
	}
	return n
}

func loopAddr(n *Node) string {
	_, port, _ := net.SplitHostPort(n.Status().Listening)
	return "127.0.0.1:" + port
}

func TestShowCodeNeedsContribute(t *testing.T) {
	n := testNode(t, "off", false)
	if _, err := n.ShowCode(); !errors.Is(err, ErrNotContributing) {
		t.Fatalf("ShowCode = %v, want ErrNotContributing", err)
	}
	if st := n.Status(); st.Listening != "" || st.Contribute {
		t.Errorf("status %+v: listening while off", st)
	}
}

func TestPairProbeUnpair(t *testing.T) {
	ctx := context.Background()
	worker, head, stranger := testNode(t, "worker", true), testNode(t, "head", false), testNode(t, "stranger", false)
	addr := loopAddr(worker)

	show, err := worker.ShowCode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := head.EnterCode(ctx, addr, "000-000-001"); !errors.Is(err, identity.ErrCodeTypo) {
		t.Fatalf("typo: %v, want ErrCodeTypo", err)
	}
	if !worker.PairStatus().Open {
		t.Fatal("a typo caught locally must not use up the window")
	}
	p, err := head.EnterCode(ctx, addr, show.Code)
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != worker.o.Identity.ID || !p.Paired {
		t.Errorf("EnterCode = %+v", p)
	}
	// The worker records its result just after sending the final PairOK.
	testwait.True(t, 5*time.Second, "the node's state", func() bool { return worker.PairStatus().Last != nil })
	if st := worker.PairStatus(); st.Open || !st.Last.OK || st.Last.Name != "head" {
		t.Errorf("worker pair status %+v, want closed window and a successful result from head", st)
	}
	for _, n := range []*Node{worker, head} {
		ps, err := identity.LoadPaired(n.o.Dir)
		if err != nil || len(ps.Devices) != 1 {
			t.Errorf("%s paired.json: %+v, %v; want one device", n.name(), ps, err)
		}
	}

	if r := head.Probe(ctx, addr); !r.OK || r.Name != "worker" {
		t.Errorf("paired probe: %+v", r)
	}
	r := stranger.Probe(ctx, addr)
	if r.OK || !strings.Contains(r.Error, "refused") {
		t.Errorf("unpaired probe: %+v, want refused", r)
	}

	// A wrong code (valid check digit) burns the window: one guess per code.
	show, _ = worker.ShowCode()
	if _, err := stranger.EnterCode(ctx, addr, "123-456-782"); !errors.Is(err, identity.ErrPakeConfirm) {
		t.Fatalf("wrong code: %v, want ErrPakeConfirm", err)
	}
	if _, err := stranger.EnterCode(ctx, addr, show.Code); err == nil {
		t.Fatal("second attempt on one code succeeded")
	}
	if worker.authorize(stranger.o.Identity.ID) != transport.Refuse {
		t.Error("stranger authorised after failed pairing")
	}

	// Unpair from the head: it tells the worker, which forgets it too.
	if _, err := head.AddPeer(ctx, addr); err != nil {
		t.Fatal(err)
	}
	if _, err := head.Unpair(ctx, worker.o.Identity.ID.String()); err != nil {
		t.Fatal(err)
	}
	testwait.True(t, 5*time.Second, "the node's state", func() bool { return worker.authorize(head.o.Identity.ID) == transport.Refuse })
	if r := head.Probe(ctx, addr); r.OK {
		t.Errorf("probe after unpair: %+v", r)
	}
	if _, err := head.Unpair(ctx, worker.o.Identity.ID.String()); !errors.Is(err, ErrNotPaired) {
		t.Errorf("second unpair: %v, want ErrNotPaired", err)
	}
}

func TestContributeToggle(t *testing.T) {
	n := testNode(t, "toggle", false)
	if err := n.SetContribute(true); err != nil {
		t.Fatal(err)
	}
	testwait.True(t, 5*time.Second, "the node's state", func() bool { return n.Status().Listening != "" })
	c, err := config.Load(n.o.Dir)
	if err != nil || !c.Contribute {
		t.Fatalf("config after on: %+v, %v", c, err)
	}
	if err := n.SetContribute(false); err != nil {
		t.Fatal(err)
	}
	testwait.True(t, 5*time.Second, "the node's state", func() bool { return n.Status().Listening == "" })
}

func TestResolve(t *testing.T) {
	n := testNode(t, "r", false)
	tests := []struct {
		in       string
		wantAddr string
		wantErr  error
	}{
		{"10.0.0.7", "10.0.0.7:0", nil},
		{"10.0.0.7:5000", "10.0.0.7:5000", nil},
		{"[fe80::1%eth0]:5000", "[fe80::1%eth0]:5000", nil},
		{"attic.local", "attic.local:0", nil},
		{"attic", "", ErrUnknownPeer},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, addrs, err := n.resolve(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if tt.wantAddr != "" && (len(addrs) != 1 || addrs[0] != tt.wantAddr) {
				t.Errorf("addrs = %v, want [%s]", addrs, tt.wantAddr)
			}
		})
	}
}
