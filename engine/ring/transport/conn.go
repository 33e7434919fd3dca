package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"homering/discovery/identity"
)

// Conn is an authenticated, framed connection after the Hello exchange.
// Send is safe from several goroutines; Recv is for one reader.
type Conn struct {
	rw     io.ReadWriteCloser
	Peer   identity.DeviceID // from the peer's certificate, never from its Hello
	Hello  Hello             // what the peer said about itself
	Proto  uint16            // negotiated protocol
	Remote string            // peer address, for logs and errors
	limit  int
	wmu    sync.Mutex // guards writes: a frame must not interleave
}

// Handshake exchanges Hellos over rw. The client writes first. peer is the
// device ID already proven by TLS (or known from the test's pipe).
func Handshake(rw io.ReadWriteCloser, client bool, own Hello, peer identity.DeviceID, remote string) (*Conn, error) {
	c := &Conn{rw: rw, Peer: peer, Remote: remote, limit: MaxFrame}
	var far Hello
	var err error
	if client {
		if err = WriteFrame(rw, Frame{MsgHello, own.encode()}); err == nil {
			far, err = c.readHello()
		}
	} else {
		if far, err = c.readHello(); err == nil {
			err = WriteFrame(rw, Frame{MsgHello, own.encode()})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("transport: hello with %s: %w", remote, err)
	}
	c.Hello = far
	if far.Purpose != own.Purpose {
		return nil, fmt.Errorf("transport: hello with %s: purpose %d, want %d: %w", remote, far.Purpose, own.Purpose, ErrHello)
	}
	p, ok := negotiate(own, far)
	if !ok {
		return nil, &VersionError{Remote: remote, Local: own, Far: far}
	}
	c.Proto = p
	return c, nil
}

func (c *Conn) readHello() (Hello, error) {
	// A Hello is tiny: do not let an unauthenticated pipe make us allocate more.
	f, err := ReadFrame(c.rw, 1024)
	if err != nil {
		return Hello{}, err
	}
	if f.Type == MsgError {
		return Hello{}, decodeError(f.Payload)
	}
	if f.Type != MsgHello {
		return Hello{}, fmt.Errorf("first frame has type %d: %w", f.Type, ErrHello)
	}
	return decodeHello(f.Payload)
}

// Send writes one frame.
func (c *Conn) Send(f Frame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return WriteFrame(c.rw, f)
}

// Recv reads one frame. An Error frame from the peer is returned as *RemoteError.
func (c *Conn) Recv() (Frame, error) {
	f, err := ReadFrame(c.rw, c.limit)
	if err != nil {
		return Frame{}, err
	}
	if f.Type == MsgError {
		return Frame{}, decodeError(f.Payload)
	}
	return f, nil
}

// Close closes the underlying connection.
func (c *Conn) Close() error { return c.rw.Close() }

// Error codes carried by MsgError. Wire constants.
const (
	CodeRefused  uint16 = 1 // not paired / not allowed
	CodeProtocol uint16 = 2 // unexpected frame
	CodePairing  uint16 = 3 // pairing failed
)

// RemoteError is an error the peer reported.
type RemoteError struct {
	Code uint16
	Text string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("peer reports: %s (code %d)", e.Text, e.Code)
}

// SendError tells the peer why the connection ends.
func (c *Conn) SendError(code uint16, text string) error {
	return c.Send(Frame{MsgError, append(binary.BigEndian.AppendUint16(nil, code), clip(text)...)})
}

func decodeError(p []byte) error {
	if len(p) < 2 {
		return &RemoteError{Code: CodeProtocol, Text: "malformed error frame"}
	}
	return &RemoteError{Code: binary.BigEndian.Uint16(p), Text: string(p[2:])}
}

// IsRemote reports whether err is a *RemoteError with the given code.
func IsRemote(err error, code uint16) bool {
	var re *RemoteError
	return errors.As(err, &re) && re.Code == code
}
