package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"homering/discovery/deviceid"
)

// The protocol range of a link (every frame type: engine/ring/transport's
// registry re-exports it as transport.ProtoMin/ProtoMax, the one range).
//
// 2: PlanInstall carries each device's GPU layers (Device.GPULayers). A
// peer on 1 would read the plan's bytes wrongly, so 1 is no longer spoken.
//
// 3: DeviceStats carries the prompt's compute (PromptUS, Prompts,
// PromptRows) and the GPU memory measured (VRAMUsed, VRAMFree), and prefill passes are pipelined in micro-batches, so a
// device queues activations while it computes. A head on 2 would refuse the
// longer DeviceStats, and a worker on 2 the second micro-batch: 2 is no
// longer spoken.
const (
	ProtoMin uint16 = 3
	ProtoMax uint16 = 3
)

// Type is a frame type. Values are wire constants: appended only, never iota.
type Type uint8

const (
	TypePlanInstall  Type = 64
	TypePlanAck      Type = 65
	TypeCommit       Type = 66
	TypeActivation   Type = 67
	TypeToken        Type = 68
	TypeGoodbye      Type = 69
	TypeSliceRequest Type = 70
	TypeSliceChunk   Type = 71
	TypeSliceList    Type = 72
)

// DType is the element type of a hidden state. Values are wire constants.
type DType uint8

const (
	F32 DType = 1
	F16 DType = 2
)

// Size is the bytes of one element, 0 for an unknown dtype.
func (d DType) Size() int {
	switch d {
	case F32:
		return 4
	case F16:
		return 2
	}
	return 0
}

func (d DType) String() string {
	switch d {
	case F32:
		return "f32"
	case F16:
		return "f16"
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Limits. MaxPayload matches transport.MaxFrame minus the type byte (a test in
// ringtest holds them equal).
const (
	MaxPayload = 64<<20 - 1
	MaxDevices = 64      // devices in one ring
	MaxRounds  = 1024    // k
	MaxLayers  = 1 << 16 // layers of a model
	MaxEmbd    = 1 << 17 // n_embd
	MaxTensors = 1 << 14 // tensors in one slice list
	MaxText    = 1024    // error and goodbye texts
)

// Codes carried by PlanAck and Goodbye. Wire constants.
type Code uint16

const (
	CodeOK          Code = 0
	CodeBadPlan     Code = 1 // the plan cannot be served by this device
	CodeNoSpace     Code = 2 // the weight slices do not fit on its disk
	CodeLoadFailed  Code = 3 // the engine could not open the windows
	CodeHeadGone    Code = 4 // the head ended the job or went away
	CodeQuit        Code = 5 // the device stops contributing
	CodeBadFrame    Code = 6 // a frame was malformed or against the plan
	CodeFetchFailed Code = 7 // weights could not be fetched or verified
)

// Sentinels. Every decode error wraps ErrMalformed or ErrTooLarge; every
// plan check error wraps ErrAgainstPlan.
var (
	ErrMalformed   = errors.New("wire: malformed message")
	ErrTooLarge    = errors.New("wire: message over a size limit")
	ErrUnknownType = errors.New("wire: unknown message type")
	ErrAgainstPlan = errors.New("wire: activation does not match the installed plan")
)

// Range is a half-open range of layer numbers [Start, End).
// Its JSON names (the runner's pipe carries plans as JSON) are part of that
// protocol: never rename them.
type Range struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

func (r Range) Len() int { return r.End - r.Start }

func (r Range) String() string { return fmt.Sprintf("%d-%d", r.Start, r.End) }

// Msg is one ring message.
type Msg interface {
	Type() Type
	appendTo(b []byte) []byte
	decode(d *decoder)
}

// Device is one device's part of a plan.
type Device struct {
	ID      deviceid.ID `json:"id"`                // its readable text on the wire and in JSON
	Release bool        `json:"release,omitempty"` // release each window after running it (memory short)
	// GPULayers is Halda's n: the first GPULayers layers of each of its
	// windows run on its GPU, the rest on its CPU. 0 ≤ GPULayers ≤ the
	// length of its shortest window.
	GPULayers int     `json:"gpu_layers,omitempty"`
	Windows   []Range `json:"windows"` // one per round; len == Plan.K
}

// Plan is the installed plan: the same message goes to every device.
type Plan struct {
	ID      uint64   `json:"id"`
	K       int      `json:"k"`
	Layers  int      `json:"layers"` // L; the windows of all devices tile [0, L) round by round
	NEmbd   int      `json:"n_embd"`
	DType   DType    `json:"dtype"`
	Devices []Device `json:"devices"` // ring order, head first
}

// PlanAck answers a PlanInstall once the device has its windows loaded (or
// cannot).
type PlanAck struct {
	Plan uint64
	Code Code
	Text string
}

// Commit tells a device that every device acknowledged the plan.
type Commit struct{ Plan uint64 }

// Activation is a hidden state after Layers, on its way to the next device.
type Activation struct {
	Plan   uint64
	Seq    uint64
	Round  int
	Layers Range // the layers the sender just ran
	Pos    int   // position of row 0 in the sequence
	Rows   int
	NEmbd  int
	DType  DType
	// Verify: the rows are a speculative verification, which every
	// window computes with row-by-row attention (engine/ggml's
	// SetRowAttention) so that each row is the bits of a one-row pass.
	Verify bool
	// Stream is the conversation the rows belong to (0 to MaxStreams-1):
	// every device keeps one KV per stream, so several requests go round
	// one ring at once, each attending only to its own positions.
	Stream int
	Data   []byte // Rows × NEmbd elements, little endian
}

// MaxStreams is how many conversations may be in flight on one ring at
// once: the stream of an activation is 3 bits of its dtype byte.
const MaxStreams = 8

// Token is a sampled token.
type Token struct {
	Plan  uint64
	Seq   uint64
	Token int32
}

// Goodbye ends the job on the receiver.
type Goodbye struct {
	Code Code
	Text string
}

// SliceRequest asks the head for bytes of one tensor of a model.
type SliceRequest struct {
	Model  [32]byte // SHA-256 of the model file's header (identifies the model)
	Name   string
	Offset uint64
	Length uint32
}

// SliceChunk carries bytes of one tensor.
type SliceChunk struct {
	Model  [32]byte
	Name   string
	Offset uint64
	Total  uint64 // the tensor's size
	Data   []byte
}

// SliceTensor is one tensor a worker may fetch, with its hash.
type SliceTensor struct {
	Name   string
	Size   uint64
	SHA256 [32]byte
}

// SliceList lists tensors and their hashes.
type SliceList struct {
	Model    [32]byte
	FileSize uint64 // of the source file, to check its header against
	Tensors  []SliceTensor
}

// Reserved names in slice requests: the source's header bytes (metadata and
// tensor table, [0, data offset)), and the tensor list with hashes.
const (
	SliceHeader = "@header"
	SliceIndex  = "@list"
)

func (*Plan) Type() Type         { return TypePlanInstall }
func (*PlanAck) Type() Type      { return TypePlanAck }
func (*Commit) Type() Type       { return TypeCommit }
func (*Activation) Type() Type   { return TypeActivation }
func (*Token) Type() Type        { return TypeToken }
func (*Goodbye) Type() Type      { return TypeGoodbye }
func (*SliceRequest) Type() Type { return TypeSliceRequest }
func (*SliceChunk) Type() Type   { return TypeSliceChunk }
func (*SliceList) Type() Type    { return TypeSliceList }

// Encode returns m's frame type and payload. It fails when m breaks a limit,
// so that a sender finds its own bug instead of the receiver.
func Encode(m Msg) (Type, []byte, error) {
	if err := validate(m); err != nil {
		return 0, nil, err
	}
	b := m.appendTo(nil)
	if len(b) > MaxPayload {
		return 0, nil, fmt.Errorf("encode type %d of %d bytes: %w", m.Type(), len(b), ErrTooLarge)
	}
	return m.Type(), b, nil
}

// Decode parses a payload of frame type t.
func Decode(t Type, p []byte) (Msg, error) {
	if len(p) > MaxPayload {
		return nil, fmt.Errorf("type %d of %d bytes: %w", t, len(p), ErrTooLarge)
	}
	var m Msg
	switch t {
	case TypePlanInstall:
		m = &Plan{}
	case TypePlanAck:
		m = &PlanAck{}
	case TypeCommit:
		m = &Commit{}
	case TypeActivation:
		m = &Activation{}
	case TypeToken:
		m = &Token{}
	case TypeGoodbye:
		m = &Goodbye{}
	case TypeSliceRequest:
		m = &SliceRequest{}
	case TypeSliceChunk:
		m = &SliceChunk{}
	case TypeSliceList:
		m = &SliceList{}
	case TypeJobStart:
		m = &JobStart{}
	case TypeJobAck:
		m = &JobAck{}
	case TypeJobLink:
		m = &JobLink{}
	case TypeDeviceStats:
		m = &DeviceStats{}
	default:
		return nil, fmt.Errorf("type %d: %w", t, ErrUnknownType)
	}
	d := &decoder{p: p}
	m.decode(d)
	if d.err == nil && len(d.p) != 0 {
		d.fail(ErrMalformed, "%d bytes after the message", len(d.p))
	}
	if d.err == nil {
		d.err = validate(m)
	}
	if d.err != nil {
		return nil, fmt.Errorf("decode type %d: %w", t, d.err)
	}
	return m, nil
}

// validate checks the invariants a message must hold on its own.
func validate(m Msg) error {
	switch m := m.(type) {
	case *Plan:
		return m.validate()
	case *Activation:
		if m.DType.Size() == 0 {
			return fmt.Errorf("activation dtype %d: %w", m.DType, ErrMalformed)
		}
		if m.Rows < 1 || m.NEmbd < 1 || m.NEmbd > MaxEmbd || m.Round < 0 || m.Round >= MaxRounds || m.Pos < 0 || m.Pos > math.MaxUint32 || m.Stream < 0 || m.Stream >= MaxStreams {
			return fmt.Errorf("activation rows %d n_embd %d round %d pos %d stream %d: %w", m.Rows, m.NEmbd, m.Round, m.Pos, m.Stream, ErrMalformed)
		}
		if err := checkRange(m.Layers, MaxLayers); err != nil {
			return err
		}
		if want, ok := dataBytes(m.Rows, m.NEmbd, m.DType); !ok || want != len(m.Data) {
			return fmt.Errorf("activation %d×%d %s with %d data bytes: %w", m.Rows, m.NEmbd, m.DType, len(m.Data), ErrMalformed)
		}
	case *PlanAck:
		return checkText(m.Text)
	case *JobAck:
		return checkText(m.Text)
	case *JobStart:
		return m.validate()
	case *DeviceStats:
		return m.validate()
	case *Goodbye:
		return checkText(m.Text)
	case *SliceRequest:
		return checkName(m.Name)
	case *SliceChunk:
		if err := checkName(m.Name); err != nil {
			return err
		}
		if m.Offset > m.Total || uint64(len(m.Data)) > m.Total-m.Offset {
			return fmt.Errorf("slice chunk %q at %d+%d of %d: %w", m.Name, m.Offset, len(m.Data), m.Total, ErrMalformed)
		}
	case *SliceList:
		if len(m.Tensors) > MaxTensors {
			return fmt.Errorf("slice list of %d tensors: %w", len(m.Tensors), ErrTooLarge)
		}
		for _, t := range m.Tensors {
			if err := checkName(t.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *Plan) validate() error {
	if p.K < 1 || p.K > MaxRounds || p.Layers < 1 || p.Layers > MaxLayers || p.NEmbd < 1 || p.NEmbd > MaxEmbd || p.DType.Size() == 0 {
		return fmt.Errorf("plan k %d layers %d n_embd %d dtype %d: %w", p.K, p.Layers, p.NEmbd, p.DType, ErrMalformed)
	}
	if len(p.Devices) < 1 || len(p.Devices) > MaxDevices {
		return fmt.Errorf("plan with %d devices: %w", len(p.Devices), ErrMalformed)
	}
	// The windows tile [0, L): round by round, device by device, contiguous.
	next := 0
	seen := map[deviceid.ID]bool{}
	for r := range p.K {
		for _, d := range p.Devices {
			if r == 0 {
				if d.ID.IsZero() || seen[d.ID] {
					return fmt.Errorf("plan device id %q empty or repeated: %w", d.ID, ErrMalformed)
				}
				seen[d.ID] = true
				if len(d.Windows) != p.K {
					return fmt.Errorf("plan device %s has %d windows for k=%d: %w", d.ID, len(d.Windows), p.K, ErrMalformed)
				}
			}
			w := d.Windows[r]
			if w.Start != next || w.End <= w.Start {
				return fmt.Errorf("plan device %s round %d window %s, want a non-empty one starting at %d: %w", d.ID, r, w, next, ErrMalformed)
			}
			if d.GPULayers < 0 || d.GPULayers > w.Len() {
				return fmt.Errorf("plan device %s has %d GPU layers in its round %d window %s: %w", d.ID, d.GPULayers, r, w, ErrMalformed)
			}
			next = w.End
		}
	}
	if next != p.Layers {
		return fmt.Errorf("plan windows end at layer %d of %d: %w", next, p.Layers, ErrMalformed)
	}
	return nil
}

// Index returns the position of id in the ring, or -1.
func (p *Plan) Index(id deviceid.ID) int {
	for i, d := range p.Devices {
		if d.ID == id {
			return i
		}
	}
	return -1
}

// CheckActivation checks a received activation against the installed plan:
// same plan, n_embd and dtype, a round of the plan, and a layer range that is
// a window of the plan in that round (the sender's).
func (p *Plan) CheckActivation(a *Activation) error {
	switch {
	case a.Plan != p.ID:
		return fmt.Errorf("activation of plan %d, installed %d: %w", a.Plan, p.ID, ErrAgainstPlan)
	case a.NEmbd != p.NEmbd || a.DType != p.DType:
		return fmt.Errorf("activation %d×%d %s, plan has n_embd %d %s: %w", a.Rows, a.NEmbd, a.DType, p.NEmbd, p.DType, ErrAgainstPlan)
	case a.Round >= p.K:
		return fmt.Errorf("activation round %d, plan has k=%d: %w", a.Round, p.K, ErrAgainstPlan)
	}
	for _, d := range p.Devices {
		if d.Windows[a.Round] == a.Layers {
			return nil
		}
	}
	return fmt.Errorf("activation after layers %s is no window of round %d: %w", a.Layers, a.Round, ErrAgainstPlan)
}

// dataBytes is rows × nEmbd × size(dtype), false when it overflows or passes
// MaxPayload.
func dataBytes(rows, nEmbd int, dt DType) (int, bool) {
	if rows < 0 || nEmbd < 0 {
		return 0, false
	}
	n := uint64(rows) * uint64(nEmbd) // both < 2^32: no overflow
	n *= uint64(dt.Size())
	if n > MaxPayload {
		return 0, false
	}
	return int(n), true
}

func checkRange(r Range, limit int) error {
	if r.Start < 0 || r.End <= r.Start || r.End > limit {
		return fmt.Errorf("layer range %s: %w", r, ErrMalformed)
	}
	return nil
}

func checkText(s string) error {
	if len(s) > MaxText {
		return fmt.Errorf("text of %d bytes: %w", len(s), ErrTooLarge)
	}
	return nil
}

func checkName(s string) error {
	if s == "" || len(s) > 255 {
		return fmt.Errorf("name of %d bytes: %w", len(s), ErrMalformed)
	}
	return nil
}

// F32Data encodes v as F32 activation data.
func F32Data(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// F32s decodes F32 activation data (a copy).
func F32s(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
