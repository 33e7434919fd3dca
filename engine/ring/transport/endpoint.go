package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"homering/discovery/identity"
)

// Path is the websocket path of a link.
const Path = "/homering/link/v1"

// Decision is what the server does with a certificate. Values are stable.
type Decision uint8

const (
	Refuse       Decision = 0
	AllowLink    Decision = 1 // paired: any purpose
	AllowPairing Decision = 2 // unpaired, pairing window open: pairing only
)

// Sentinels of link setup.
var (
	ErrRefused     = errors.New("transport: the other device refused this device (they are not paired)")
	ErrWrongDevice = errors.New("transport: the device at this address is not the one expected")
	ErrNotAllowed  = errors.New("transport: peer is not paired")
)

// Config configures an Endpoint.
type Config struct {
	Identity  *identity.Identity                                                // non-nil
	Hello     func() Hello                                                      // non-nil; this device's Hello (Purpose is set per connection)
	Authorize func(identity.DeviceID) Decision                                  // non-nil; asked during every server-side TLS handshake
	Log       *slog.Logger                                                      // non-nil
	Timeout   time.Duration                                                     // for TLS + websocket + Hello; 0 means 10 s
	Dial      func(ctx context.Context, network, addr string) (net.Conn, error) // nil: net.Dialer
	// Refusals counts what Serve refuses; nil: the Endpoint keeps its own.
	Refusals *Refusals
}

// Endpoint dials and serves links for one device.
type Endpoint struct{ cfg Config }

// Refusals is where Serve counts what it refuses.
func (e *Endpoint) Refusals() *Refusals { return e.cfg.Refusals }

// New returns an Endpoint. cfg's non-nil fields must be set.
func New(cfg Config) *Endpoint {
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Dial == nil {
		cfg.Dial = (&net.Dialer{}).DialContext
	}
	if cfg.Refusals == nil {
		cfg.Refusals = &Refusals{}
	}
	return &Endpoint{cfg: cfg}
}

func (e *Endpoint) serverTLS(hi *tls.ClientHelloInfo) (*tls.Config, error) {
	remote := hi.Conn.RemoteAddr().String()
	return &tls.Config{
		Certificates: []tls.Certificate{e.cfg.Identity.Cert},
		MinVersion:   tls.VersionTLS13,
		NextProtos:   []string{"http/1.1"},
		// Self-signed certificates: chain verification is meaningless, the pin
		// below is the whole check.
		ClientAuth: tls.RequireAnyClientCert,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				e.cfg.Refusals.Add(RefusedNoCert)
				e.cfg.Log.Warn("refused connection without a certificate", "addr", remote)
				return ErrNotAllowed
			}
			id := identity.IDFromCert(raw[0])
			if e.cfg.Authorize(id) == Refuse {
				e.cfg.Refusals.Add(RefusedUnpaired)
				e.cfg.Log.Warn("refused connection from an unpaired device", "addr", remote, "peer", id)
				return fmt.Errorf("%w: %s", ErrNotAllowed, id)
			}
			return nil
		},
	}, nil
}

// Serve accepts links on ln until ctx ends, then closes ln. Each accepted
// connection is handed to handle in its own goroutine, which owns it.
func (e *Endpoint) Serve(ctx context.Context, ln net.Listener, handle func(context.Context, *Conn)) error {
	up := websocket.Upgrader{
		HandshakeTimeout: e.cfg.Timeout,
		CheckOrigin:      func(*http.Request) bool { return true }, // no browsers here: TLS client certs decide
	}
	mux := http.NewServeMux()
	mux.HandleFunc(Path, func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "client certificate required", http.StatusForbidden)
			return
		}
		peer := identity.IDFromCert(r.TLS.PeerCertificates[0].Raw)
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			e.cfg.Log.Debug("websocket upgrade failed", "addr", r.RemoteAddr, "err", err)
			return
		}
		_ = ws.SetReadDeadline(time.Now().Add(e.cfg.Timeout))
		c, err := e.serverHandshake(&wsStream{ws: ws}, peer, r.RemoteAddr)
		if err != nil {
			e.cfg.Refusals.Add(setupReason(err))
			e.cfg.Log.Info("link setup failed", "addr", r.RemoteAddr, "peer", peer, "err", err)
			_ = ws.Close()
			return
		}
		_ = ws.SetReadDeadline(time.Time{})
		handle(ctx, c)
	})
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: e.cfg.Timeout,
		TLSConfig: &tls.Config{
			Certificates:       []tls.Certificate{e.cfg.Identity.Cert},
			GetConfigForClient: e.serverTLS,
		},
		// Handshake failures reach ErrorLog only as text: handshakeLog
		// counts them by reason and logs them.
		ErrorLog:    log.New(&handshakeLog{e: e}, "", 0),
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		// Close stops accepting; hijacked websockets are not its business:
		// each handler closes its link when ctx ends.
		_ = srv.Close()
	}()
	err := srv.ServeTLS(ln, "", "")
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// setupReason is the refusal reason of a link whose Hello exchange failed.
func setupReason(err error) string {
	var ve *VersionError
	switch {
	case errors.As(err, &ve):
		return RefusedVersion
	case errors.Is(err, ErrNotAllowed):
		return RefusedUnpaired // paired for pairing only, asking for a link
	case errors.Is(err, ErrFrameTooBig):
		return RefusedFrameSize
	}
	return RefusedHello
}

// handshakeLog receives net/http's server log. Its only lines of interest
// are failed TLS handshakes, which crypto/tls reports as unexported error
// strings: the text is all there is to classify them by.
type handshakeLog struct {
	e      *Endpoint
	mu     sync.Mutex
	failed uint64 // handshakes that ended for no refusal of ours
}

func (h *handshakeLog) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	e := h.e
	switch {
	case !strings.Contains(line, "TLS handshake error"):
		e.cfg.Log.Debug(line)
	case strings.Contains(line, ErrNotAllowed.Error()):
		// Refused by serverTLS, which counted and logged it with the device.
	case strings.Contains(line, "invalid signature by the client certificate"):
		// The certificate names a device whose key the peer does not
		// hold: it claims another device's ID.
		e.cfg.Refusals.Add(RefusedWrongID)
		e.cfg.Log.Warn("refused a device presenting another device's certificate without its key", "err", line)
	case strings.Contains(line, "didn't provide a certificate"):
		e.cfg.Refusals.Add(RefusedNoCert)
		e.cfg.Log.Warn("refused connection without a certificate", "err", line)
	default:
		// Port scanners, floods and dropped connections: counted, logged
		// once and then every 100th so that a flood cannot fill the log.
		e.cfg.Refusals.Add(RefusedHandshake)
		h.mu.Lock()
		h.failed++
		n := h.failed
		h.mu.Unlock()
		if n == 1 || n%100 == 0 {
			e.cfg.Log.Info("connection dropped before its TLS handshake completed", "so_far", n, "err", line)
		}
	}
	return len(p), nil
}

func (e *Endpoint) serverHandshake(rw *wsStream, peer identity.DeviceID, remote string) (*Conn, error) {
	own := e.cfg.Hello()
	c := &Conn{rw: rw, Peer: peer, Remote: remote, limit: MaxFrame}
	far, err := c.readHello()
	if err != nil {
		return nil, err
	}
	switch d := e.cfg.Authorize(peer); {
	case d == AllowLink, d == AllowPairing && far.Purpose == PurposePair:
	default:
		_ = c.SendError(CodeRefused, "this device is not paired with yours")
		return nil, fmt.Errorf("purpose %d: %w", far.Purpose, ErrNotAllowed)
	}
	own.Purpose = far.Purpose
	if err := WriteFrame(rw, Frame{MsgHello, own.encode()}); err != nil {
		return nil, err
	}
	c.Hello = far
	p, ok := negotiate(own, far)
	if !ok {
		return nil, &VersionError{Remote: remote, Local: own, Far: far}
	}
	c.Proto = p
	return c, nil
}

// Dial opens a link to addr (host:port). expect pins the peer's device ID;
// the zero ID accepts any certificate and is only for pairing and probes:
// the caller must then check c.Peer itself.
func (e *Endpoint) Dial(ctx context.Context, addr string, expect identity.DeviceID, purpose Purpose) (*Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	var seen identity.DeviceID
	d := websocket.Dialer{
		NetDialContext:   e.cfg.Dial,
		HandshakeTimeout: e.cfg.Timeout,
		TLSClientConfig:  e.clientTLS(expect, &seen),
	}
	ws, resp, err := d.DialContext(ctx, "wss://"+addr+Path, nil)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		return nil, e.dialError(addr, seen, err)
	}
	own := e.cfg.Hello()
	own.Purpose = purpose
	if dl, ok := ctx.Deadline(); ok {
		_ = ws.SetReadDeadline(dl)
	}
	c, err := Handshake(&wsStream{ws: ws}, true, own, seen, addr)
	if err != nil {
		_ = ws.Close()
		if IsRemote(err, CodeRefused) {
			return nil, fmt.Errorf("link to %s (device %s): %w", addr, seen.Short(), ErrRefused)
		}
		return nil, err
	}
	_ = ws.SetReadDeadline(time.Time{})
	return c, nil
}

// Probe does only a TLS handshake with addr and returns the device ID of the
// certificate it presents. It needs no pairing: the server shows its
// certificate before it checks the client's.
func (e *Endpoint) Probe(ctx context.Context, addr string) (identity.DeviceID, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	var seen identity.DeviceID
	raw, err := e.cfg.Dial(ctx, "tcp", addr)
	if err != nil {
		return identity.DeviceID{}, fmt.Errorf("transport: connect to %s: %w", addr, err)
	}
	defer raw.Close()
	tc := tls.Client(raw, e.clientTLS(identity.DeviceID{}, &seen))
	if err := tc.HandshakeContext(ctx); err != nil && seen.IsZero() {
		return identity.DeviceID{}, fmt.Errorf("transport: TLS with %s: %w", addr, err)
	}
	return seen, nil
}

func (e *Endpoint) clientTLS(expect identity.DeviceID, seen *identity.DeviceID) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{e.cfg.Identity.Cert},
		MinVersion:   tls.VersionTLS13,
		NextProtos:   []string{"http/1.1"},
		// Chains and host names mean nothing for self-signed device
		// certificates; VerifyPeerCertificate checks the pin instead.
		InsecureSkipVerify: true, //nolint:gosec // pinned below
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return ErrWrongDevice
			}
			*seen = identity.IDFromCert(raw[0])
			if !expect.IsZero() && *seen != expect {
				return fmt.Errorf("%w: it is %s, expected %s", ErrWrongDevice, seen, expect)
			}
			return nil
		},
	}
}

func (e *Endpoint) dialError(addr string, seen identity.DeviceID, err error) error {
	if errors.Is(err, ErrWrongDevice) {
		return fmt.Errorf("link to %s: %w", addr, err)
	}
	// TLS 1.3 clients learn of a refused certificate only from the alert the
	// server sends when the client next reads.
	if strings.Contains(err.Error(), "bad certificate") || strings.Contains(err.Error(), "certificate required") {
		return fmt.Errorf("link to %s (device %s): %w", addr, seen.Short(), ErrRefused)
	}
	return fmt.Errorf("transport: link to %s: %w", addr, err)
}
