package api

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"homering/app/agent"
	"homering/app/api/apitype"
	"homering/app/api/client"
	"homering/app/config"
	"homering/app/node"
	"homering/discovery/identity"
	"homering/discovery/mdns"
	"homering/internal/testlog"
)

// testNode is a node on dir for the API to serve: a fresh identity, no
// network interfaces (no mDNS), link port 0; log writes to t.
func testNode(t *testing.T, dir string) (*node.Node, *identity.Identity, *slog.Logger) {
	t.Helper()
	cfg := config.Default()
	cfg.LinkPort = 0
	id, err := identity.LoadOrCreate(dir, time.Now(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(testlog.Writer(t), nil))
	n := node.New(node.Options{Dir: dir, Config: cfg, Identity: id, App: "test", Hostname: "box", Log: log,
		Now: time.Now, Random: rand.Reader, Run: "r", Interfaces: func(string) ([]mdns.Iface, error) { return nil, nil }})
	return n, id, log
}

// testAgent is the agent over n (on dir) for the API to serve, ended with
// the test; opts, if not nil, sets its options first. Tests run only its
// node (runNode): no planner looks, no background measurement.
func testAgent(t *testing.T, n *node.Node, dir string, log *slog.Logger, opts func(*agent.Options)) *agent.Agent {
	t.Helper()
	o := agent.Options{Dir: dir, Log: log, Node: n}
	if opts != nil {
		opts(&o)
	}
	a := agent.New(o)
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Logf("agent: %v", err)
		}
	})
	return a
}

// runNode runs n until the test ends and returns a context that ends with
// it.
func runNode(t *testing.T, n *node.Node) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("node: %v", err)
		}
	})
	return ctx
}

func TestAPI(t *testing.T) {
	dir := t.TempDir()
	n, id, log := testNode(t, dir)
	ctx := runNode(t, n)

	srv := httptest.NewServer((&Server{Agent: testAgent(t, n, dir, log, nil), Log: log, Token: "secret"}).Handler())
	defer srv.Close()
	c := &client.Client{Info: apitype.Info{URL: srv.URL, Token: "secret"}, HTTP: srv.Client()}

	st, err := c.Status(ctx)
	if err != nil || st.Device.ID != id.ID || st.Device.Name != "box" || st.Contribute {
		t.Fatalf("Status = %+v, %v", st, err)
	}

	tests := []struct {
		name       string
		call       func() error
		wantStatus int
		wantText   string
	}{
		{"wrong token", func() error {
			bad := *c
			bad.Info.Token = "guess"
			_, err := bad.Status(ctx)
			return err
		}, http.StatusUnauthorized, "API token"},
		{"code while not contributing", func() error { _, err := c.ShowCode(ctx); return err }, http.StatusConflict, "Contribute is off"},
		{"typo in code", func() error { _, err := c.EnterCode(ctx, "10.0.0.1", "123-456-789"); return err }, http.StatusBadRequest, "typo"},
		{"unknown peer", func() error { _, err := c.Unpair(ctx, "nobody"); return err }, http.StatusNotFound, "No such device"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ae *client.APIError
			if err := tt.call(); !errors.As(err, &ae) || ae.Status != tt.wantStatus || !strings.Contains(ae.Text, tt.wantText) {
				t.Errorf("error = %v, want HTTP %d mentioning %q", err, tt.wantStatus, tt.wantText)
			}
		})
	}

	wctx, wcancel := context.WithCancel(ctx)
	got := make(chan apitype.Event, 8)
	watchDone := make(chan error, 1)
	go func() { watchDone <- c.Watch(wctx, func(e apitype.Event) { got <- e }) }()
	// The subscription is in place once the server has flushed its headers;
	// retry the change until an event arrives.
	var ev apitype.Event
	for ev.Kind == "" {
		if _, err := c.SetContribute(ctx, true); err != nil {
			t.Fatal(err)
		}
		select {
		case ev = <-got:
		case <-time.After(200 * time.Millisecond):
		}
	}
	if ev.Kind != "contribute" || ev.On == nil || !*ev.On {
		t.Errorf("watch event = %+v, want contribute on", ev)
	}
	wcancel()
	if err := <-watchDone; err != nil {
		t.Logf("watch ended: %v", err)
	}

	st, err = c.SetContribute(ctx, true)
	if err != nil || !st.Contribute {
		t.Fatalf("SetContribute = %+v, %v", st, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if st, _ := c.Status(ctx); st.Listening != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not listening 5s after contribute on")
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	show, err := c.ShowCode(ctx)
	if err != nil || len(show.Code) != 11 {
		t.Fatalf("ShowCode = %+v, %v", show, err)
	}
	if ps, err := c.PairStatus(ctx); err != nil || !ps.Open {
		t.Errorf("PairStatus = %+v, %v; want open", ps, err)
	}
	d, err := c.Doctor(ctx)
	if err != nil || len(d.Checks) == 0 {
		t.Errorf("Doctor = %+v, %v", d, err)
	}
}

func TestFromDirWithoutAgent(t *testing.T) {
	if _, err := client.FromDir(t.TempDir()); !errors.Is(err, client.ErrNoAgent) {
		t.Errorf("FromDir(empty) = %v, want ErrNoAgent", err)
	}
}
