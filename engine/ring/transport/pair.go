package transport

import (
	"fmt"
	"io"

	"homering/discovery/identity"
)

const shareLen = 65 // uncompressed P-256 point

// PairHead runs the head's side of pairing on a PurposePair connection. It
// returns nil once the worker has pinned this device; the caller then pins
// c.Peer.
func PairHead(c *Conn, self identity.DeviceID, code identity.Code, random io.Reader) error {
	p, share, err := identity.NewPake(identity.RoleHead, code, self, c.Peer, random)
	if err != nil {
		return err
	}
	if err := c.Send(Frame{MsgPakeA, share}); err != nil {
		return err
	}
	f, err := expect(c, MsgPakeB)
	if err != nil {
		return err
	}
	if len(f.Payload) <= shareLen {
		return identity.ErrPakePoint
	}
	if err := p.Finish(f.Payload[:shareLen]); err != nil {
		return err
	}
	if err := p.Verify(f.Payload[shareLen:]); err != nil {
		_ = c.SendError(CodePairing, "pairing failed: the code did not match")
		return err
	}
	if err := c.Send(Frame{MsgPakeConfirm, p.Confirmation()}); err != nil {
		return err
	}
	_, err = expect(c, MsgPairOK)
	return err
}

// PairWorker runs the worker's side. pin is called once the head has proved
// it knows the code, before the final PairOK; if pin fails the head is told.
func PairWorker(c *Conn, self identity.DeviceID, code identity.Code, random io.Reader, pin func() error) error {
	f, err := expect(c, MsgPakeA)
	if err != nil {
		return err
	}
	p, share, err := identity.NewPake(identity.RoleWorker, code, self, c.Peer, random)
	if err != nil {
		return err
	}
	if err := p.Finish(f.Payload); err != nil {
		return err
	}
	if err := c.Send(Frame{MsgPakeB, append(share, p.Confirmation()...)}); err != nil {
		return err
	}
	f, err = expect(c, MsgPakeConfirm)
	if err != nil {
		return err
	}
	if err := p.Verify(f.Payload); err != nil {
		_ = c.SendError(CodePairing, "pairing failed: the code did not match")
		return err
	}
	if err := pin(); err != nil {
		_ = c.SendError(CodePairing, "pairing failed on the other device")
		return err
	}
	return c.Send(Frame{MsgPairOK, nil})
}

func expect(c *Conn, t MsgType) (Frame, error) {
	f, err := c.Recv()
	if err != nil {
		if IsRemote(err, CodePairing) {
			return Frame{}, fmt.Errorf("%w (%v)", identity.ErrPakeConfirm, err)
		}
		return Frame{}, err
	}
	if f.Type != t {
		return Frame{}, fmt.Errorf("transport: got frame type %d, want %d", f.Type, t)
	}
	return f, nil
}
