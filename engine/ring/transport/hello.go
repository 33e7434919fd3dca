package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Purpose says what a connection is for. Values are wire constants.
type Purpose uint8

const (
	PurposeLink Purpose = 1 // ring and control traffic between paired devices
	PurposePair Purpose = 2 // a pairing exchange (unpaired peers allowed)
	// PurposeSlice carries weight slices of a ring job (head → worker), on a
	// connection of its own so that weights never queue in front of
	// activations. Paired peers only, as PurposeLink.
	PurposeSlice Purpose = 3
)

// Hello is the first frame each side sends.
type Hello struct {
	ProtoMin, ProtoMax uint16
	Purpose            Purpose
	App                string // app version, e.g. 0.1.0
	Name               string // human device name
}

// ErrHello means a Hello frame could not be decoded.
var ErrHello = errors.New("transport: malformed Hello")

func (h Hello) encode() []byte {
	app, name := clip(h.App), clip(h.Name)
	b := binary.BigEndian.AppendUint16(nil, h.ProtoMin)
	b = binary.BigEndian.AppendUint16(b, h.ProtoMax)
	b = append(b, byte(h.Purpose), byte(len(app)))
	b = append(b, app...)
	b = append(b, byte(len(name)))
	return append(b, name...)
}

func decodeHello(p []byte) (Hello, error) {
	if len(p) < 6 {
		return Hello{}, ErrHello
	}
	h := Hello{ProtoMin: binary.BigEndian.Uint16(p), ProtoMax: binary.BigEndian.Uint16(p[2:]), Purpose: Purpose(p[4])}
	p = p[5:]
	n := int(p[0])
	if len(p) < 1+n+1 {
		return Hello{}, ErrHello
	}
	h.App, p = string(p[1:1+n]), p[1+n:]
	n = int(p[0])
	if len(p) != 1+n {
		return Hello{}, ErrHello
	}
	h.Name = string(p[1:])
	if h.ProtoMin > h.ProtoMax || (h.Purpose != PurposeLink && h.Purpose != PurposePair && h.Purpose != PurposeSlice) {
		return Hello{}, fmt.Errorf("protocol %d-%d purpose %d: %w", h.ProtoMin, h.ProtoMax, h.Purpose, ErrHello)
	}
	return h, nil
}

func clip(s string) string {
	if len(s) > 255 {
		return s[:255]
	}
	return s
}

// VersionError means two devices share no protocol version.
type VersionError struct {
	Remote     string // address of the other device
	Local, Far Hello
}

func (e *VersionError) Error() string {
	older := "this device"
	if e.Far.ProtoMax < e.Local.ProtoMin {
		older = "the other device (" + e.Remote + ")"
	}
	return fmt.Sprintf("transport: cannot talk to %s: it runs Homering %s (link protocol %d-%d), this device runs Homering %s (link protocol %d-%d); update %s",
		e.Remote, e.Far.App, e.Far.ProtoMin, e.Far.ProtoMax, e.Local.App, e.Local.ProtoMin, e.Local.ProtoMax, older)
}

// negotiate returns the highest protocol both ranges contain.
func negotiate(a, b Hello) (uint16, bool) {
	lo, hi := max(a.ProtoMin, b.ProtoMin), min(a.ProtoMax, b.ProtoMax)
	return hi, lo <= hi
}
