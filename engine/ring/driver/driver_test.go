package driver

import (
	"context"
	"go/parser"
	"go/token"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/discovery/identity"
	"homering/engine/ggml"
	"homering/engine/ring"
	"homering/engine/ring/ggmlengine"
	"homering/engine/ring/transport"
	"homering/engine/ring/wire"
	"homering/internal/testlog"
)

const stories = "../../../../shared/models/stories260K.gguf"

var prompt = []int32{1, 403, 407, 261, 3}

const nGen = 12

func rg(a, b int) wire.Range { return wire.Range{Start: a, End: b} }

func logger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testlog.Writer(t), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func openModel(t *testing.T) *ggml.Model {
	t.Helper()
	m, err := ggml.Open(stories)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// reference is greedy generation with the whole model as one window on one
// device: the single-device engine.
func reference(t *testing.T) []int32 {
	m := openModel(t)
	w, err := m.NewWindow(ggml.WindowParams{First: 0, Last: m.Info().NLayer, Embed: true, Output: true, NCtx: 64, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var out []int32
	in, pos := prompt, 0
	for range nGen {
		logits, err := w.EvalTokens(in, pos)
		if err != nil {
			t.Fatal(err)
		}
		pos += len(in)
		tok := ggmlengine.Greedy(logits)
		out = append(out, tok)
		in = []int32{tok}
	}
	return out
}

// link connects two ends of a net.Pipe with transport's real framing and
// Hello: from's end (the client, which writes first) and to's end, each
// naming the other as its remote. Both close when the test ends.
func link(t testing.TB, from, to string) (fromEnd, toEnd *transport.Conn) {
	t.Helper()
	c1, c2 := net.Pipe()
	hello := transport.Hello{ProtoMin: wire.ProtoMin, ProtoMax: wire.ProtoMax, Purpose: transport.PurposeLink, App: "test"}
	errc := make(chan error, 1)
	go func() {
		var err error
		toEnd, err = transport.Handshake(c2, false, hello, identity.DeviceID{1}, from)
		errc <- err
	}()
	fromEnd, err := transport.Handshake(c1, true, hello, identity.DeviceID{2}, to)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fromEnd.Close(); _ = toEnd.Close() })
	return fromEnd, toEnd
}

// pipe connects two drivers with transport's real framing and Hello.
func pipe(t testing.TB, ctx context.Context, a *Driver, aID string, b *Driver, bID string) {
	t.Helper()
	ac, bc := link(t, aID, bID)
	a.AddConn(ctx, tid(bID), ac)
	b.AddConn(ctx, tid(aID), bc)
}

func await[T ring.Action](t *testing.T, d *Driver) T {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case a := <-d.Out():
			if v, ok := a.(T); ok {
				return v
			}
			t.Logf("action %v", a)
		case <-deadline:
			var zero T
			t.Fatalf("no %T within 30 s", zero)
			return zero
		}
	}
}

// twoDeviceTokens runs plan (its layer count and width set from info) on
// head a with engine ea and worker b with eb, linked by a pipe, and returns
// the nGen greedy tokens a emits from prompt. Ticks are long (250 ms:
// silence means 750 ms) so that a loaded CI machine is not mistaken for a
// lost device.
func twoDeviceTokens(t *testing.T, plan *wire.Plan, info ggml.ModelInfo, ea, eb Engine) []int32 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	plan.Layers, plan.NEmbd, plan.DType = info.NLayer, info.NEmbd, wire.F32
	a := New(ring.New(tid("a"), 250), ea, 250*time.Millisecond, logger(t).With("device", "a"))
	b := New(ring.New(tid("b"), 250), eb, 250*time.Millisecond, logger(t).With("device", "b"))
	pipe(t, ctx, a, "a", b, "b")
	done := make(chan error, 2)
	go func() { done <- a.Run(ctx) }()
	go func() { done <- b.Run(ctx) }()
	go func() {
		for range b.Out() { // workers' Ready and EndJob: not needed here
		}
	}()
	defer func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Logf("a driver ended: %v", err) // cancelled: context.Canceled
			}
		}
	}()
	if err := a.Post(ctx, ring.PlanInstalled{Plan: plan}); err != nil {
		t.Fatal(err)
	}
	await[ring.Ready](t, a)
	var got []int32
	in, pos := prompt, 0
	for range nGen {
		if err := a.Post(ctx, ring.StartToken{Tokens: in, Pos: pos}); err != nil {
			t.Fatal(err)
		}
		tok := await[ring.EmitToken](t, a).Token
		pos += len(in)
		got = append(got, tok)
		in = []int32{tok}
	}
	return got
}

// Two devices over transport frames give the same greedy tokens as the
// single-device engine, with k = 1 and k = 2.
func TestTwoDevicesEqualSingleDevice(t *testing.T) {
	want := reference(t)
	tests := []struct {
		name string
		plan *wire.Plan
	}{
		{"k=1", &wire.Plan{ID: 1, K: 1, Devices: []wire.Device{
			{ID: tid("a"), Windows: []wire.Range{rg(0, 2)}},
			{ID: tid("b"), Windows: []wire.Range{rg(2, 5)}}}}},
		{"k=2", &wire.Plan{ID: 2, K: 2, Devices: []wire.Device{
			{ID: tid("a"), Windows: []wire.Range{rg(0, 1), rg(2, 4)}},
			{ID: tid("b"), Release: true, Windows: []wire.Range{rg(1, 2), rg(4, 5)}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ma, mb := openModel(t), openModel(t)
			ea, eb := &ggmlengine.GGML{M: ma, NCtx: 64, Threads: 1}, &ggmlengine.GGML{M: mb, NCtx: 64, Threads: 1}
			defer ea.Close()
			defer eb.Close()
			got := twoDeviceTokens(t, tt.plan, ma.Info(), ea, eb)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tokens (-single device +ring)\n%s", diff)
			}
		})
	}
}

// A worker that sends a malformed frame is disconnected and treated as lost:
// the head re-plans without it and keeps running.
func TestMalformedFrameMeansLost(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ma := openModel(t)
	plan := &wire.Plan{ID: 1, K: 1, Layers: ma.Info().NLayer, NEmbd: ma.Info().NEmbd, DType: wire.F32, Devices: []wire.Device{
		{ID: tid("a"), Windows: []wire.Range{rg(0, 2)}}, {ID: tid("b"), Windows: []wire.Range{rg(2, 5)}}}}
	ea := &ggmlengine.GGML{M: ma, NCtx: 64, Threads: 1}
	defer ea.Close()
	a := New(ring.New(tid("a"), 250), ea, 250*time.Millisecond, logger(t).With("device", "a"))
	client, bad := link(t, "a", "b")
	a.AddConn(ctx, tid("b"), client)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	// b reads what a sends (so a never blocks), and answers with garbage.
	go func() {
		for {
			if _, err := bad.Recv(); err != nil {
				return
			}
		}
	}()
	if err := a.Post(ctx, ring.PlanInstalled{Plan: plan}); err != nil {
		t.Fatal(err)
	}
	if err := bad.Send(transport.Frame{Type: transport.MsgType(wire.TypeActivation), Payload: []byte{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	r := await[ring.Replan](t, a)
	if diff := cmp.Diff([]string{"b"}, names(r.Without)); diff != "" {
		t.Errorf("Replan.Without (-want +got)\n%s", diff)
	}
	cancel()
	if err := <-done; err != nil {
		t.Logf("the driver ended: %v", err)
	}
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
