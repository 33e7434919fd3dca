package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"homering/app/api/apitype"
	"homering/app/problem"
)

// chatListener runs the compatible APIs' own port: on 127.0.0.1 alone
// while the person keeps the chat API to this computer, and on every
// interface while Settings share it with the network (api.Server's
// compatAuth then asks each non-loopback client for the API key).
//
// Sharing binds the wildcard address rather than each LAN interface's
// address: one socket covers the addresses a laptop gains later (Wi-Fi
// joined, DHCP renewed, IPv6 privacy addresses) with no watcher of
// interfaces, and it keeps loopback clients on the same port. Only this
// port is shared; the control API and the UI stay on loopback with their
// token.
//
// SetExpose rebinds at once, so the setting needs no restart. Connections
// already open stay served (a streaming reply ends normally); once sharing
// is off, compatAuth refuses any request that still arrives on one from
// another computer.
type chatListener struct {
	port chatPort
	srv  *http.Server
	log  *slog.Logger

	mu      sync.Mutex
	ln      net.Listener // nil: not listening, and problem says why
	expose  bool         // ln is the wildcard address
	problem *apitype.Problem
	serving bool // serve has started; a new ln is served at once
	wg      sync.WaitGroup
}

// newChatListener opens the port as the settings ask (expose: shared).
// The handler comes with serve (it needs the api.Server that holds c).
func newChatListener(p chatPort, expose bool, log *slog.Logger) *chatListener {
	c := &chatListener{port: p, log: log,
		srv: &http.Server{ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}}
	c.mu.Lock()
	c.bind(expose)
	c.mu.Unlock()
	return c
}

// State is the base URL for this computer's clients (always the loopback
// address: a wildcard socket answers there too), or "" and why not.
func (c *chatListener) State() (string, *apitype.Problem) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ln == nil {
		return "", c.problem
	}
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port.port)), c.problem
}

// Shared is whether the port listens on every interface now.
func (c *chatListener) Shared() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ln != nil && c.expose
}

// SetExpose rebinds the port on all interfaces (on) or loopback alone.
// The old socket closes before the new one opens (the two would collide on
// the port), a gap of one system call in which a connect is refused.
func (c *chatListener) SetExpose(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ln != nil && c.expose == on {
		return
	}
	if c.ln != nil {
		_ = c.ln.Close() // its Serve returns; open connections go on
		c.ln = nil
	}
	c.bind(on)
	if c.ln != nil {
		c.log.Info("chat API rebound", "shared", c.expose, "addr", c.ln.Addr().String())
	}
}

// bind opens the socket; with sharing asked for but refused (another
// program holds the port on one address), it falls back to loopback and
// says so. c.mu is held.
func (c *chatListener) bind(expose bool) {
	c.problem = nil
	if expose {
		ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(c.port.port)))
		if err == nil {
			c.ln, c.expose = ln, true
			c.start(ln)
			return
		}
		c.log.Warn("chat API: cannot share on the network", "err", err)
	}
	ln, pr := listenChatAPI(c.port)
	c.ln, c.expose, c.problem = ln, false, pr
	if ln != nil {
		c.start(ln)
		if expose {
			p := problem.Make(problem.ChatAPIPort, fmt.Sprintf("The chat API could not be shared on the network (port %d is taken on another address); it answers on this computer only. Choose another port in Settings (API port).", c.port.port))
			c.problem = &p
		}
	}
}

// start serves ln once serve runs. c.mu is held.
func (c *chatListener) start(ln net.Listener) {
	if !c.serving {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		_ = c.srv.Serve(ln) // returns when SetExpose or Shutdown closes ln
	}()
}

// serve serves h on the port (and each one SetExpose opens) until ctx
// ends, then shuts the server down, giving open requests 2 seconds.
func (c *chatListener) serve(ctx context.Context, h http.Handler) {
	c.mu.Lock()
	c.srv.Handler = h
	c.serving = true
	if c.ln != nil {
		c.start(c.ln)
	}
	c.mu.Unlock()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = c.srv.Shutdown(sctx)
	c.mu.Lock()
	if c.ln != nil {
		_ = c.ln.Close() // Shutdown closed it already unless its Serve had not begun
		c.ln = nil
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// close releases a port that serve never served (the agent failed to start).
func (c *chatListener) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ln != nil {
		_ = c.ln.Close()
		c.ln = nil
	}
}
