package identity

import (
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
)

// Role says which side of the pairing exchange a device plays. Values are
// part of the transcript and never change.
type Role uint8

const (
	// RoleHead typed the code (SPAKE2's A, the TLS client).
	RoleHead Role = 1
	// RoleWorker showed the code (SPAKE2's B, the TLS server).
	RoleWorker Role = 2
)

// Sentinels of the pairing exchange.
var (
	ErrPakePoint   = errors.New("identity: the other device sent an invalid pairing message")
	ErrPakeConfirm = errors.New("identity: pairing failed: the code did not match, or someone is between the two devices; show a new code and try again")
)

// Pake is one side of one SPAKE2 run. It is used once and then dropped.
type Pake struct {
	role       Role
	self, peer DeviceID
	w, secret  *big.Int
	own        []byte // our public share, uncompressed point
	confirmOwn []byte // set by Finish
	confirmExp []byte // set by Finish: what the peer must send
}

// NewPake starts a run: self and peer are the device IDs seen in the TLS
// handshake (own certificate, peer's certificate). It returns the share to send.
func NewPake(role Role, code Code, self, peer DeviceID, random io.Reader) (*Pake, []byte, error) {
	if role != RoleHead && role != RoleWorker {
		return nil, nil, fmt.Errorf("identity: pake role %d is neither head nor worker", role)
	}
	c := elliptic.P256()
	n := c.Params().N
	buf := make([]byte, 48) // 384 bits reduced mod a 256-bit order: bias < 2^-128
	if _, err := io.ReadFull(random, buf); err != nil {
		return nil, nil, fmt.Errorf("identity: read random for pairing: %w", err)
	}
	secret := new(big.Int).SetBytes(buf)
	secret.Mod(secret, new(big.Int).Sub(n, big.NewInt(1)))
	secret.Add(secret, big.NewInt(1))
	w := codeScalar(code)

	mine, _ := pakePoints(role)
	// SPAKE2 adds points and multiplies arbitrary ones: crypto/ecdh, which
	// deprecated these elliptic.Curve methods, offers neither.
	gx, gy := c.ScalarBaseMult(secret.Bytes())        //nolint:staticcheck // SPAKE2 arithmetic, see above
	px, py := c.ScalarMult(mine.x, mine.y, w.Bytes()) //nolint:staticcheck // SPAKE2 arithmetic, see above
	sx, sy := c.Add(gx, gy, px, py)                   //nolint:staticcheck // SPAKE2 arithmetic, see above
	own := elliptic.Marshal(c, sx, sy)                //nolint:staticcheck // P-256 point encoding; crypto/ecdh has no point addition
	return &Pake{role: role, self: self, peer: peer, w: w, secret: secret, own: own}, own, nil
}

// Finish takes the peer's share and derives both confirmation values.
func (p *Pake) Finish(peerShare []byte) error {
	c := elliptic.P256()
	qx, qy := elliptic.Unmarshal(c, peerShare) //nolint:staticcheck // validates the point is on the curve
	if qx == nil {
		return ErrPakePoint
	}
	_, theirs := pakePoints(p.role)
	// K = secret · (peerShare − w·theirs)
	tx, ty := c.ScalarMult(theirs.x, theirs.y, p.w.Bytes()) //nolint:staticcheck // SPAKE2 arithmetic (see NewPake)
	ty = new(big.Int).Sub(c.Params().P, ty)                 // negate
	dx, dy := c.Add(qx, qy, tx, ty)                         //nolint:staticcheck // SPAKE2 arithmetic (see NewPake)
	kx, _ := c.ScalarMult(dx, dy, p.secret.Bytes())         //nolint:staticcheck // SPAKE2 arithmetic (see NewPake)
	if kx.Sign() == 0 {
		return ErrPakePoint
	}

	idA, idB, shareA, shareB := p.self, p.peer, p.own, peerShare
	if p.role == RoleWorker {
		idA, idB, shareA, shareB = p.peer, p.self, peerShare, p.own
	}
	var tt []byte
	for _, part := range [][]byte{[]byte("homering-pair-v1"), idA[:], idB[:], shareA, shareB, kx.FillBytes(make([]byte, 32)), p.w.FillBytes(make([]byte, 32))} {
		tt = binary.BigEndian.AppendUint32(tt, uint32(len(part)))
		tt = append(tt, part...)
	}
	th := sha256.Sum256(tt)
	confirm := func(label string) []byte {
		k := hmac.New(sha256.New, th[:])
		k.Write([]byte(label))
		m := hmac.New(sha256.New, k.Sum(nil))
		m.Write(tt)
		return m.Sum(nil)
	}
	ca, cb := confirm("confirm head"), confirm("confirm worker")
	if p.role == RoleHead {
		p.confirmOwn, p.confirmExp = ca, cb
	} else {
		p.confirmOwn, p.confirmExp = cb, ca
	}
	return nil
}

// Confirmation is the value this side sends after Finish.
func (p *Pake) Confirmation() []byte { return p.confirmOwn }

// Verify checks the peer's confirmation in constant time.
func (p *Pake) Verify(peerConfirm []byte) error {
	if p.confirmExp == nil || !hmac.Equal(p.confirmExp, peerConfirm) {
		return ErrPakeConfirm
	}
	return nil
}

type point struct{ x, y *big.Int }

// pakePoints returns (the point this role blinds with, the peer's).
func pakePoints(r Role) (mine, theirs point) {
	m, n := hashToPoint("homering SPAKE2 P-256 M"), hashToPoint("homering SPAKE2 P-256 N")
	if r == RoleHead {
		return m, n
	}
	return n, m
}

// hashToPoint maps a label to a P-256 point nobody knows the discrete log of:
// the first x = SHA-256(label ‖ counter) that lies on the curve, even y.
func hashToPoint(label string) point {
	c := elliptic.P256()
	for ctr := uint32(0); ; ctr++ {
		h := sha256.Sum256(binary.BigEndian.AppendUint32([]byte(label), ctr))
		x, y := elliptic.UnmarshalCompressed(c, append([]byte{2}, h[:]...))
		if x != nil {
			return point{x, y}
		}
	}
}

// codeScalar derives SPAKE2's w from the code.
func codeScalar(code Code) *big.Int {
	h := sha256.Sum256([]byte("homering pairing code v1\x00" + string(code)))
	w := new(big.Int).SetBytes(h[:])
	return w.Mod(w, elliptic.P256().Params().N)
}
