package wire

import (
	"encoding/binary"
	"fmt"

	"homering/discovery/deviceid"
)

var be = binary.BigEndian

// decoder reads big-endian fields; the first failure sticks and later reads
// return zero values, so decode methods read straight through.
type decoder struct {
	p   []byte
	err error
}

func (d *decoder) fail(sentinel error, format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format+": %w", append(args, sentinel)...)
	}
}

func (d *decoder) take(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.p) {
		d.fail(ErrMalformed, "%s needs %d bytes, %d left", what, n, len(d.p))
		return nil
	}
	b := d.p[:n:n]
	d.p = d.p[n:]
	return b
}

func (d *decoder) u8(what string) uint8 {
	if b := d.take(1, what); b != nil {
		return b[0]
	}
	return 0
}

func (d *decoder) u16(what string) uint16 {
	if b := d.take(2, what); b != nil {
		return be.Uint16(b)
	}
	return 0
}

func (d *decoder) u32(what string) uint32 {
	if b := d.take(4, what); b != nil {
		return be.Uint32(b)
	}
	return 0
}

func (d *decoder) u64(what string) uint64 {
	if b := d.take(8, what); b != nil {
		return be.Uint64(b)
	}
	return 0
}

func (d *decoder) str(what string) string { return string(d.take(int(d.u8(what)), what)) }

// deviceID reads a device ID in its readable text form, the only spelling
// the wire carries (one device, one byte string: what decodes re-encodes
// to the same bytes).
func (d *decoder) deviceID(what string) deviceid.ID {
	s := d.str(what)
	id, err := deviceid.Parse(s)
	if err != nil || id.String() != s {
		d.fail(ErrMalformed, "%s %q is not a device ID in its readable form", what, s)
	}
	return id
}

func (d *decoder) text() string {
	n := int(d.u16("text length"))
	if n > MaxText {
		d.fail(ErrTooLarge, "text of %d bytes", n)
		return ""
	}
	return string(d.take(n, "text"))
}

func (d *decoder) rng(what string) Range {
	return Range{int(d.u32(what)), int(d.u32(what))}
}

// count reads a count and checks that count × minSize bytes remain before the
// caller allocates count elements.
func (d *decoder) count(n, limit, minSize int, what string) int {
	if d.err != nil {
		return 0
	}
	if n > limit {
		d.fail(ErrTooLarge, "%d %s, limit %d", n, what, limit)
		return 0
	}
	if n*minSize > len(d.p) {
		d.fail(ErrMalformed, "%d %s need at least %d bytes, %d left", n, what, n*minSize, len(d.p))
		return 0
	}
	return n
}

func appendStr(b []byte, s string) []byte { return append(append(b, byte(len(s))), s...) }

func appendText(b []byte, s string) []byte {
	return append(be.AppendUint16(b, uint16(len(s))), s...)
}

func appendRange(b []byte, r Range) []byte {
	return be.AppendUint32(be.AppendUint32(b, uint32(r.Start)), uint32(r.End))
}

func (p *Plan) appendTo(b []byte) []byte {
	b = be.AppendUint64(b, p.ID)
	b = be.AppendUint16(b, uint16(p.K))
	b = be.AppendUint32(b, uint32(p.Layers))
	b = be.AppendUint32(b, uint32(p.NEmbd))
	b = append(b, byte(p.DType), byte(len(p.Devices)))
	for _, d := range p.Devices {
		b = appendStr(b, d.ID.String())
		var flags byte
		if d.Release {
			flags |= 1
		}
		b = append(b, flags)
		b = be.AppendUint32(b, uint32(d.GPULayers))
		for _, w := range d.Windows {
			b = appendRange(b, w)
		}
	}
	return b
}

func (p *Plan) decode(d *decoder) {
	p.ID = d.u64("plan id")
	p.K = int(d.u16("k"))
	p.Layers = int(d.u32("layers"))
	p.NEmbd = int(d.u32("n_embd"))
	p.DType = DType(d.u8("dtype"))
	if p.K < 1 || p.K > MaxRounds {
		d.fail(ErrMalformed, "k=%d", p.K)
	}
	n := d.count(int(d.u8("devices")), MaxDevices, 2+4+8*p.K, "devices")
	if n == 0 {
		return
	}
	p.Devices = make([]Device, n)
	for i := range p.Devices {
		dev := &p.Devices[i]
		dev.ID = d.deviceID("device id")
		flags := d.u8("flags")
		if flags&^1 != 0 {
			d.fail(ErrMalformed, "device flags %#x", flags)
		}
		dev.Release = flags&1 != 0
		// validate checks it against the windows; the limit keeps the
		// int conversion exact on 32-bit platforms.
		gpu := d.u32("gpu layers")
		if gpu > MaxLayers {
			d.fail(ErrMalformed, "%d GPU layers", gpu)
		}
		dev.GPULayers = int(gpu)
		if d.count(p.K, MaxRounds, 8, "windows") == 0 {
			return
		}
		dev.Windows = make([]Range, p.K)
		for r := range dev.Windows {
			dev.Windows[r] = d.rng("window")
		}
	}
}

func (a *PlanAck) appendTo(b []byte) []byte {
	return appendText(be.AppendUint16(be.AppendUint64(b, a.Plan), uint16(a.Code)), a.Text)
}

func (a *PlanAck) decode(d *decoder) {
	a.Plan, a.Code, a.Text = d.u64("plan id"), Code(d.u16("code")), d.text()
}

func (c *Commit) appendTo(b []byte) []byte { return be.AppendUint64(b, c.Plan) }
func (c *Commit) decode(d *decoder)        { c.Plan = d.u64("plan id") }

// verifyBit of an activation's dtype byte is Activation.Verify, and its
// bits 4-6 (streamMask) Activation.Stream: a frame of stream 0 is what a
// build without streams sends.
const (
	verifyBit   = 0x80
	streamShift = 4
	streamMask  = 0x70
)

func (a *Activation) appendTo(b []byte) []byte {
	b = be.AppendUint64(b, a.Plan)
	b = be.AppendUint64(b, a.Seq)
	b = be.AppendUint16(b, uint16(a.Round))
	b = appendRange(b, a.Layers)
	b = be.AppendUint32(b, uint32(a.Pos))
	b = be.AppendUint32(b, uint32(a.Rows))
	b = be.AppendUint32(b, uint32(a.NEmbd))
	dt := byte(a.DType)
	if a.Verify {
		dt |= verifyBit
	}
	dt |= byte(a.Stream<<streamShift) & streamMask
	b = append(b, dt)
	return append(b, a.Data...)
}

func (a *Activation) decode(d *decoder) {
	a.Plan = d.u64("plan id")
	a.Seq = d.u64("seq")
	a.Round = int(d.u16("round"))
	a.Layers = d.rng("layers")
	a.Pos = int(d.u32("pos"))
	a.Rows = int(d.u32("rows"))
	a.NEmbd = int(d.u32("n_embd"))
	dt := d.u8("dtype")
	a.DType, a.Verify, a.Stream = DType(dt&^(verifyBit|streamMask)), dt&verifyBit != 0, int(dt&streamMask)>>streamShift
	if d.err != nil {
		return
	}
	n, ok := dataBytes(a.Rows, a.NEmbd, a.DType)
	if !ok || a.DType.Size() == 0 {
		d.fail(ErrTooLarge, "activation %d×%d of dtype %d", a.Rows, a.NEmbd, a.DType)
		return
	}
	a.Data = d.take(n, "activation data")
}

func (t *Token) appendTo(b []byte) []byte {
	return be.AppendUint32(be.AppendUint64(be.AppendUint64(b, t.Plan), t.Seq), uint32(t.Token))
}

func (t *Token) decode(d *decoder) {
	t.Plan, t.Seq, t.Token = d.u64("plan id"), d.u64("seq"), int32(d.u32("token"))
}

func (g *Goodbye) appendTo(b []byte) []byte {
	return appendText(be.AppendUint16(b, uint16(g.Code)), g.Text)
}

func (g *Goodbye) decode(d *decoder) { g.Code, g.Text = Code(d.u16("code")), d.text() }

func (r *SliceRequest) appendTo(b []byte) []byte {
	b = appendStr(append(b, r.Model[:]...), r.Name)
	return be.AppendUint32(be.AppendUint64(b, r.Offset), r.Length)
}

func (r *SliceRequest) decode(d *decoder) {
	copy(r.Model[:], d.take(32, "model hash"))
	r.Name, r.Offset, r.Length = d.str("name"), d.u64("offset"), d.u32("length")
}

func (c *SliceChunk) appendTo(b []byte) []byte {
	b = appendStr(append(b, c.Model[:]...), c.Name)
	b = be.AppendUint64(be.AppendUint64(b, c.Offset), c.Total)
	return append(be.AppendUint32(b, uint32(len(c.Data))), c.Data...)
}

func (c *SliceChunk) decode(d *decoder) {
	copy(c.Model[:], d.take(32, "model hash"))
	c.Name, c.Offset, c.Total = d.str("name"), d.u64("offset"), d.u64("total")
	c.Data = d.take(int(d.u32("data length")), "chunk data")
}

func (l *SliceList) appendTo(b []byte) []byte {
	b = be.AppendUint16(be.AppendUint64(append(b, l.Model[:]...), l.FileSize), uint16(len(l.Tensors)))
	for _, t := range l.Tensors {
		b = append(be.AppendUint64(appendStr(b, t.Name), t.Size), t.SHA256[:]...)
	}
	return b
}

func (l *SliceList) decode(d *decoder) {
	copy(l.Model[:], d.take(32, "model hash"))
	l.FileSize = d.u64("file size")
	n := d.count(int(d.u16("tensors")), MaxTensors, 1+8+32, "tensors")
	if n == 0 {
		return
	}
	l.Tensors = make([]SliceTensor, n)
	for i := range l.Tensors {
		t := &l.Tensors[i]
		t.Name, t.Size = d.str("name"), d.u64("size")
		copy(t.SHA256[:], d.take(32, "sha256"))
	}
}
