package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/discovery/deviceid"
)

func plan2() *Plan {
	return &Plan{ID: 7, K: 2, Layers: 8, NEmbd: 4, DType: F32, Devices: []Device{
		{ID: deviceid.ForName("a"), GPULayers: 2, Windows: []Range{{0, 3}, {4, 7}}},
		{ID: deviceid.ForName("b"), Release: true, Windows: []Range{{3, 4}, {7, 8}}},
	}}
}

func TestRoundTrip(t *testing.T) {
	var model [32]byte
	model[0], model[31] = 1, 2
	tests := []struct {
		name string
		msg  Msg
	}{
		{"plan", plan2()},
		{"plan one device", &Plan{ID: 1, K: 1, Layers: 2, NEmbd: 8, DType: F16, Devices: []Device{{ID: deviceid.ForName("solo"), Windows: []Range{{0, 2}}}}}},
		{"plan every layer on the GPU", &Plan{ID: 1, K: 1, Layers: 3, NEmbd: 8, DType: F32, Devices: []Device{
			{ID: deviceid.ForName("gpu"), GPULayers: 2, Windows: []Range{{0, 2}}}, {ID: deviceid.ForName("cpu"), Release: true, Windows: []Range{{2, 3}}}}}},
		{"ack", &PlanAck{Plan: 7, Code: CodeNoSpace, Text: "disk full"}},
		{"ack ok", &PlanAck{Plan: 7}},
		{"commit", &Commit{Plan: 9}},
		{"activation f32", &Activation{Plan: 7, Seq: 3, Round: 1, Layers: Range{4, 7}, Pos: 12, Rows: 2, NEmbd: 2, DType: F32, Data: F32Data([]float32{1, -2, 3.5, 0})}},
		{"activation f16", &Activation{Plan: 7, Seq: 0, Round: 0, Layers: Range{0, 3}, Rows: 1, NEmbd: 3, DType: F16, Data: []byte{1, 2, 3, 4, 5, 6}}},
		{"activation of a verification", &Activation{Plan: 7, Seq: 5, Round: 0, Layers: Range{0, 3}, Pos: 40, Rows: 2, NEmbd: 1, DType: F16, Verify: true, Data: []byte{1, 2, 3, 4}}},
		{"activation of stream 7", &Activation{Plan: 7, Seq: 6, Round: 1, Layers: Range{3, 4}, Pos: 9, Rows: 1, NEmbd: 1, DType: F32, Stream: 7, Data: F32Data([]float32{2})}},
		{"verification of stream 3", &Activation{Plan: 7, Seq: 5, Layers: Range{0, 3}, Rows: 1, NEmbd: 1, DType: F16, Verify: true, Stream: 3, Data: []byte{1, 2}}},
		{"token", &Token{Plan: 7, Seq: 4, Token: -1}},
		{"goodbye", &Goodbye{Code: CodeHeadGone, Text: "head went away"}},
		{"slice request", &SliceRequest{Model: model, Name: "blk.3.attn_q.weight", Offset: 1 << 33, Length: 1 << 20}},
		{"slice chunk", &SliceChunk{Model: model, Name: "blk.3.attn_q.weight", Offset: 2, Total: 5, Data: []byte{9, 8, 7}}},
		{"job start", &JobStart{Job: 3, Model: model, NCtx: 512, TickMS: 500, Peers: []Peer{{ID: deviceid.ForName("b"), Addr: "127.0.0.1:4000"}, {ID: deviceid.ForName("c"), Addr: "[::1]:5"}}}},
		{"job start no peers", &JobStart{Job: 3, Model: model, NCtx: 1, TickMS: 1, NoPrefetch: true}},
		{"job start idle", &JobStart{Job: 3, Model: model, NCtx: 64, TickMS: 500, NoPrefetch: true, Idle: true}},
		{"job ack", &JobAck{Job: 3, Code: CodeBadPlan, Text: "serving another job"}},
		{"job link", &JobLink{Job: 3}},
		{"device stats", &DeviceStats{Plan: 2, Tokens: 12, ComputeUS: 1 << 40, Pressure: 10000, Fetched: 5, SliceBytes: 1 << 33, PromptUS: 1 << 35, Prompts: 3, PromptRows: 70, VRAMUsed: 3 << 30, VRAMFree: 5 << 30}},
		{"slice list", &SliceList{Model: model, FileSize: 1 << 40, Tensors: []SliceTensor{{Name: "x", Size: 10, SHA256: model}, {Name: "y", Size: 0}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ, p, err := Encode(tt.msg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(typ, p)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.msg, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			// Every strict prefix is refused, never a panic.
			for i := range p {
				if _, err := Decode(typ, p[:i]); !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) {
					t.Fatalf("prefix of %d bytes: err %v, want malformed", i, err)
				}
			}
			if _, err := Decode(typ, append(p, 0)); !errors.Is(err, ErrMalformed) {
				t.Errorf("trailing byte: err %v, want malformed", err)
			}
		})
	}
}

// The stream is bits 4-6 of the dtype byte, so that a frame of stream 0 is
// byte for byte what a build without streams sends; stream 8 does not fit.
func TestActivationStreamBits(t *testing.T) {
	a := &Activation{Plan: 1, Layers: Range{0, 1}, Rows: 1, NEmbd: 1, DType: F16, Verify: true, Stream: 5, Data: []byte{0, 0}}
	_, p, err := Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	if dt := p[len(p)-3]; dt != 0x80|5<<4|2 {
		t.Errorf("dtype byte %#x, want %#x", dt, 0x80|5<<4|2)
	}
	a.Stream = 0
	_, p, _ = Encode(a)
	if dt := p[len(p)-3]; dt != 0x82 {
		t.Errorf("stream 0: dtype byte %#x, want 0x82", dt)
	}
	for _, bad := range []int{-1, MaxStreams} {
		a.Stream = bad
		if _, _, err := Encode(a); !errors.Is(err, ErrMalformed) {
			t.Errorf("stream %d: err %v, want malformed", bad, err)
		}
	}
}

// TestTypeNumbers pins the wire constants: changing one breaks old peers.
func TestTypeNumbers(t *testing.T) {
	got := []Type{TypePlanInstall, TypePlanAck, TypeCommit, TypeActivation, TypeToken, TypeGoodbye, TypeSliceRequest, TypeSliceChunk, TypeSliceList,
		TypeJobStart, TypeJobAck, TypeJobLink, TypeDeviceStats}
	want := []Type{64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if F32 != 1 || F16 != 2 {
		t.Errorf("dtypes renumbered: f32 %d f16 %d", F32, F16)
	}
}

func TestDecodeErrors(t *testing.T) {
	act := func(rows, nEmbd uint32, dt byte, data int) []byte {
		b := be.AppendUint64(nil, 1)
		b = be.AppendUint64(b, 0)
		b = be.AppendUint16(b, 0)
		b = be.AppendUint32(be.AppendUint32(b, 0), 1)
		b = be.AppendUint32(b, 0)
		b = be.AppendUint32(be.AppendUint32(b, rows), nEmbd)
		return append(append(b, dt), make([]byte, data)...)
	}
	_, good, _ := Encode(plan2())
	gap := *plan2()
	gap.Devices = []Device{gap.Devices[0], {ID: deviceid.ForName("b"), Windows: []Range{{4, 5}, {7, 8}}}}
	// Device a's windows are 3 layers long: 4 GPU layers cannot be its first.
	gpu := func(n uint32) []byte {
		p := slices.Clone(good)
		be.PutUint32(p[19+1+1+len(plan2().Devices[0].ID.String())+1:], n) // header, device count, id a (length and text), flags
		return p
	}
	tests := []struct {
		name string
		typ  Type
		p    []byte
		want error
	}{
		{"unknown type", 200, nil, ErrUnknownType},
		{"transport type", 1, nil, ErrUnknownType},
		{"activation rows×n_embd past the limit", TypeActivation, act(1<<20, 1<<16, 1, 0), ErrTooLarge},
		{"activation huge rows, no data", TypeActivation, act(0xffffffff, 0xffffffff, 1, 0), ErrTooLarge},
		{"activation short data", TypeActivation, act(2, 2, 1, 15), ErrMalformed},
		{"activation long data", TypeActivation, act(2, 2, 1, 17), ErrMalformed},
		{"activation bad dtype", TypeActivation, act(1, 1, 9, 4), ErrTooLarge},
		{"activation zero rows", TypeActivation, act(0, 4, 1, 0), ErrMalformed},
		{"plan 255 devices claimed in few bytes", TypePlanInstall, append(good[:19:19], 255), ErrTooLarge},
		{"plan 60 devices claimed in few bytes", TypePlanInstall, append(good[:19:19], 60), ErrMalformed},
		{"plan with a gap", TypePlanInstall, gap.appendTo(nil), ErrMalformed},
		{"plan with more GPU layers than a window", TypePlanInstall, gpu(4), ErrMalformed},
		{"plan with GPU layers past the layer limit", TypePlanInstall, gpu(1 << 31), ErrMalformed},
		{"slice list count past what remains", TypeSliceList, be.AppendUint16(make([]byte, 40), 100), ErrMalformed},
		{"text too long", TypeGoodbye, append(be.AppendUint16([]byte{0, 1}, 5000), make([]byte, 5000)...), ErrTooLarge},
		{"chunk past its total", TypeSliceChunk, (&SliceChunk{Name: "x", Offset: 4, Total: 5, Data: []byte{1, 2}}).appendTo(nil), ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Decode(tt.typ, tt.p)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Decode = %v, %v; want %v", m, err, tt.want)
			}
		})
	}
}

// A plan's device IDs travel as their readable text too.
func TestPlanDeviceIDText(t *testing.T) {
	p := plan2()
	_, b, err := Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range p.Devices {
		text := append([]byte{byte(len(d.ID.String()))}, d.ID.String()...)
		if !bytes.Contains(b, text) {
			t.Errorf("plan payload does not hold %q with its length byte", d.ID.String())
		}
	}
	zero := plan2()
	zero.Devices[1].ID = deviceid.ID{}
	if _, _, err := Encode(zero); !errors.Is(err, ErrMalformed) {
		t.Errorf("a plan device without an ID encoded: %v", err)
	}
}

// A JobStart's peer IDs travel as their readable text (the bytes the string
// field carried before it was typed), and only that spelling decodes.
func TestJobStartPeerIDText(t *testing.T) {
	id := deviceid.ForName("b")
	_, p, err := Encode(&JobStart{Job: 1, NCtx: 8, TickMS: 500, Peers: []Peer{{ID: id, Addr: "x:1"}}})
	if err != nil {
		t.Fatal(err)
	}
	text := append([]byte{byte(len(id.String()))}, id.String()...)
	if !bytes.Contains(p, text) {
		t.Fatalf("payload %x does not hold %q with its length byte", p, id.String())
	}
	compact := bytes.Replace(p, text, append([]byte{byte(len(id.Compact()))}, id.Compact()...), 1)
	if _, err := Decode(TypeJobStart, compact); !errors.Is(err, ErrMalformed) {
		t.Errorf("a compact peer ID decoded: %v", err)
	}
}

func TestEncodeRefusesBadMessages(t *testing.T) {
	bad := plan2()
	bad.Devices[1].Windows = bad.Devices[1].Windows[:1]
	negGPU, bigGPU := plan2(), plan2()
	negGPU.Devices[0].GPULayers = -1
	bigGPU.Devices[1].GPULayers = 2 // its windows hold one layer each
	for _, m := range []Msg{
		bad, negGPU, bigGPU,
		&Activation{Plan: 1, Layers: Range{0, 1}, Rows: 1, NEmbd: 2, DType: F32, Data: make([]byte, 4)},
		&Goodbye{Text: strings.Repeat("x", MaxText+1)},
		&SliceRequest{Name: ""},
		&JobStart{Job: 1, NCtx: 0, TickMS: 1},
		&JobStart{Job: 1, NCtx: 8, TickMS: 0},
		&JobStart{Job: 1, NCtx: 8, TickMS: 1, Peers: []Peer{{ID: deviceid.ForName("b")}}},
		&JobStart{Job: 1, NCtx: 8, TickMS: 1, Peers: []Peer{{Addr: "x:1"}}},
		&DeviceStats{Pressure: 10001},
	} {
		if _, _, err := Encode(m); err == nil {
			t.Errorf("Encode(%T) accepted a message that breaks its invariants", m)
		}
	}
}

func TestCheckActivation(t *testing.T) {
	p := plan2()
	ok := Activation{Plan: 7, Seq: 1, Round: 1, Layers: Range{4, 7}, Rows: 1, NEmbd: 4, DType: F32}
	tests := []struct {
		name   string
		modify func(a *Activation)
		ok     bool
	}{
		{"matches", func(*Activation) {}, true},
		{"other plan", func(a *Activation) { a.Plan = 8 }, false},
		{"n_embd", func(a *Activation) { a.NEmbd = 8 }, false},
		{"dtype", func(a *Activation) { a.DType = F16 }, false},
		{"round past k", func(a *Activation) { a.Round = 2 }, false},
		{"layers of another round", func(a *Activation) { a.Layers = Range{0, 3} }, false},
		{"layers no window", func(a *Activation) { a.Layers = Range{4, 6} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := ok
			tt.modify(&a)
			err := p.CheckActivation(&a)
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrAgainstPlan)) {
				t.Errorf("CheckActivation = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestF32Data(t *testing.T) {
	v := []float32{1, -0.5, 3e38}
	if diff := cmp.Diff(v, F32s(F32Data(v))); diff != "" {
		t.Error(diff)
	}
	if got := binary.LittleEndian.Uint32(F32Data([]float32{1})); got != 0x3f800000 {
		t.Errorf("F32Data is not little endian: %#x", got)
	}
}

func FuzzDecode(f *testing.F) {
	for _, m := range []Msg{plan2(), &PlanAck{Plan: 1, Text: "x"}, &Activation{Plan: 7, Layers: Range{0, 3}, Rows: 1, NEmbd: 1, DType: F32, Data: make([]byte, 4)},
		&SliceList{Tensors: []SliceTensor{{Name: "t"}}}, &SliceChunk{Name: "t", Total: 1, Data: []byte{1}},
		&JobStart{Job: 1, NCtx: 8, TickMS: 500, Peers: []Peer{{ID: deviceid.ForName("b"), Addr: "x:1"}}}, &DeviceStats{Pressure: 5}} {
		typ, p, _ := Encode(m)
		f.Add(byte(typ), p)
	}
	f.Fuzz(func(t *testing.T, typ byte, p []byte) {
		m, err := Decode(Type(typ), p)
		if err != nil {
			return
		}
		// What decodes re-encodes to the same bytes.
		typ2, p2, err := Encode(m)
		if err != nil || typ2 != Type(typ) || !bytes.Equal(p, p2) {
			t.Fatalf("decoded %#v re-encodes to %d %x, %v", m, typ2, p2, err)
		}
	})
}

func TestPackageDoc(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil || len(strings.Fields(f.Doc.Text())) < 30 {
		t.Error("doc.go: the package comment is missing or too short to be a spec")
	}
}
