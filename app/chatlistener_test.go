package app

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"testing"
)

// freePort finds a TCP port nothing listens on, on any address.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestChatListenerRebind: the chat API's port is on loopback alone while
// not shared, on the wildcard address while shared, and SetExpose moves it
// both ways while it serves, keeping the loopback URL. (app/apptest
// checks the same from another network namespace.)
func TestChatListenerRebind(t *testing.T) {
	port := freePort(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c := newChatListener(chatPort{port: port}, false, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.serve(ctx, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	}()
	defer func() { cancel(); <-done }()

	bound := func(wantShared bool) {
		t.Helper()
		c.mu.Lock()
		addr := c.ln.Addr().(*net.TCPAddr)
		c.mu.Unlock()
		if shared := addr.IP.IsUnspecified(); shared != wantShared || !(shared || addr.IP.IsLoopback()) {
			t.Errorf("bound to %v, want shared=%v", addr, wantShared)
		}
		url, pr := c.State()
		if want := "http://127.0.0.1:" + strconv.Itoa(port); url != want || pr != nil {
			t.Errorf("State() = %q, %v; want %q and no problem", url, pr, want)
		}
		res, err := http.Get(url + "/")
		if err != nil {
			t.Fatalf("loopback client: %v", err)
		}
		b, _ := io.ReadAll(res.Body)
		_ = res.Body.Close() // read to the end already
		if string(b) != "ok" {
			t.Errorf("loopback client got %q", b)
		}
	}
	bound(false)
	c.SetExpose(true)
	bound(true)
	c.SetExpose(true) // no change: no rebind
	bound(true)
	c.SetExpose(false)
	bound(false)
}

// TestChatListenerShareRefused: when the port is held on another address,
// sharing falls back to loopback and says so in the Status's problem.
func TestChatListenerShareRefused(t *testing.T) {
	port := freePort(t)
	other, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", strconv.Itoa(port)))
	if err != nil {
		t.Skipf("no 127.0.0.2 here: %v", err)
	}
	defer other.Close()
	c := newChatListener(chatPort{port: port}, true, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer c.close()
	url, pr := c.State()
	if url == "" || pr == nil || c.expose {
		t.Fatalf("State() = %q, %v (shared %v); want the loopback URL and a problem", url, pr, c.expose)
	}
	t.Log(pr.Text)
}
