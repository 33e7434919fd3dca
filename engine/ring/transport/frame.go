package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MsgType identifies a frame. Values are wire constants: never renumber.
type MsgType uint8

const (
	MsgHello       MsgType = 1
	MsgError       MsgType = 2
	MsgPing        MsgType = 3
	MsgPong        MsgType = 4
	MsgUnpair      MsgType = 5
	MsgPakeA       MsgType = 16
	MsgPakeB       MsgType = 17
	MsgPakeConfirm MsgType = 18
	MsgPairOK      MsgType = 19
	// MsgRingFirst is the first type engine/ring/wire may use.
	MsgRingFirst MsgType = 64
)

// MaxFrame is the largest frame (type + payload) accepted by default: room
// for a batch of hidden states of a 70B model with margin.
const MaxFrame = 64 << 20

// Sentinels of framing.
var (
	ErrFrameTooBig = errors.New("transport: frame larger than the limit")
	ErrFrameEmpty  = errors.New("transport: frame without a type")
)

// Frame is one message.
type Frame struct {
	Type    MsgType
	Payload []byte
}

// WriteFrame writes f with a single Write call (one websocket message).
func WriteFrame(w io.Writer, f Frame) error {
	if len(f.Payload)+1 > MaxFrame {
		return fmt.Errorf("write frame type %d of %d bytes: %w", f.Type, len(f.Payload)+1, ErrFrameTooBig)
	}
	buf := make([]byte, 5+len(f.Payload))
	binary.BigEndian.PutUint32(buf, uint32(1+len(f.Payload)))
	buf[4] = byte(f.Type)
	copy(buf[5:], f.Payload)
	_, err := w.Write(buf)
	return err
}

// ReadFrame reads one frame of at most limit bytes (type + payload).
func ReadFrame(r io.Reader, limit int) (Frame, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:4]); err != nil {
		return Frame{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n == 0 {
		return Frame{}, ErrFrameEmpty
	}
	if uint64(n) > uint64(limit) {
		return Frame{}, fmt.Errorf("frame of %d bytes, limit %d: %w", n, limit, ErrFrameTooBig)
	}
	if _, err := io.ReadFull(r, hdr[4:5]); err != nil {
		return Frame{}, unexpected(err)
	}
	f := Frame{Type: MsgType(hdr[4]), Payload: make([]byte, n-1)}
	if _, err := io.ReadFull(r, f.Payload); err != nil {
		return Frame{}, unexpected(err)
	}
	return f, nil
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
