package ring

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/discovery/deviceid"
	"homering/engine/ring/wire"
	"homering/halda"
)

func TestFromHalda(t *testing.T) {
	lr := func(a, b int) halda.LayerRange { return halda.LayerRange{Start: a, End: b} }
	wr := func(a, b int) wire.Range { return wire.Range{Start: a, End: b} }
	tests := []struct {
		name    string
		plan    halda.Plan
		want    *wire.Plan
		wantErr error
	}{
		{
			name: "two devices, k=2, one short of memory",
			plan: halda.Plan{K: 2, Window: 4, Ring: []halda.Assignment{
				{Device: "head", ID: tid("head"), Case: halda.M4, W: 3, Layers: []halda.LayerRange{lr(0, 3), lr(4, 7)}},
				{Device: "laptop", ID: tid("laptop"), Case: halda.M3, W: 1, Layers: []halda.LayerRange{lr(3, 4), lr(7, 8)}},
			}},
			want: &wire.Plan{ID: 5, K: 2, Layers: 8, NEmbd: 64, DType: wire.F32, Devices: []wire.Device{
				{ID: tid("head"), Windows: []wire.Range{wr(0, 3), wr(4, 7)}},
				{ID: tid("laptop"), Release: true, Windows: []wire.Range{wr(3, 4), wr(7, 8)}},
			}},
		},
		{
			// The paper's M_m with a GPU: n_m of its w_m layers per round
			// on the GPU, the first of each window (engine/ring/driver).
			name: "GPU layers: n kept per device, k=2",
			plan: halda.Plan{K: 2, Window: 5, Ring: []halda.Assignment{
				{Device: "head", ID: tid("head"), Case: halda.M4, W: 2, N: 0, Layers: []halda.LayerRange{lr(0, 2), lr(5, 7)}},
				{Device: "cuda", ID: tid("cuda"), Case: halda.M4, W: 3, N: 2, Layers: []halda.LayerRange{lr(2, 5), lr(7, 10)}},
			}},
			want: &wire.Plan{ID: 5, K: 2, Layers: 10, NEmbd: 64, DType: wire.F32, Devices: []wire.Device{
				{ID: tid("head"), Windows: []wire.Range{wr(0, 2), wr(5, 7)}},
				{ID: tid("cuda"), GPULayers: 2, Windows: []wire.Range{wr(2, 5), wr(7, 10)}},
			}},
		},
		{
			name: "GPU layers: a whole window on the GPU, memory short on the CPU side",
			plan: halda.Plan{K: 1, Window: 4, Ring: []halda.Assignment{
				{Device: "metal", ID: tid("metal"), Case: halda.M2, W: 4, N: 4, Layers: []halda.LayerRange{lr(0, 4)}},
			}},
			want: &wire.Plan{ID: 5, K: 1, Layers: 4, NEmbd: 64, DType: wire.F32, Devices: []wire.Device{
				{ID: tid("metal"), Release: true, GPULayers: 4, Windows: []wire.Range{wr(0, 4)}},
			}},
		},
		{
			name: "GPU layers: more than the window holds",
			plan: halda.Plan{K: 1, Ring: []halda.Assignment{
				{Device: "a", ID: tid("a"), Case: halda.M4, W: 2, N: 3, Layers: []halda.LayerRange{lr(0, 2)}},
				{Device: "b", ID: tid("b"), Case: halda.M4, W: 2, Layers: []halda.LayerRange{lr(2, 4)}},
			}},
			wantErr: wire.ErrMalformed,
		},
		{
			name: "windows with a gap",
			plan: halda.Plan{K: 1, Ring: []halda.Assignment{
				{Device: "a", ID: tid("a"), Case: halda.M4, Layers: []halda.LayerRange{lr(0, 3)}},
				{Device: "b", ID: tid("b"), Case: halda.M4, Layers: []halda.LayerRange{lr(4, 8)}},
			}},
			wantErr: wire.ErrMalformed,
		},
		{name: "empty plan", plan: halda.Plan{K: 1}, wantErr: wire.ErrMalformed},
		{
			name: "a device known by name only",
			plan: halda.Plan{K: 1, Ring: []halda.Assignment{
				{Device: "laptop", Case: halda.M4, W: 2, Layers: []halda.LayerRange{lr(0, 2)}},
			}},
			wantErr: ErrNoDeviceID,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromHalda(5, tt.plan, 64)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestSamePlacement(t *testing.T) {
	base := func() *wire.Plan {
		return &wire.Plan{ID: 1, K: 1, Layers: 4, NEmbd: 8, DType: wire.F32, Devices: []wire.Device{
			{ID: deviceid.ForName("h"), Windows: []wire.Range{{Start: 0, End: 2}}}, {ID: deviceid.ForName("w"), Windows: []wire.Range{{Start: 2, End: 4}}}}}
	}
	for _, tt := range []struct {
		name   string
		change func(p *wire.Plan)
		want   bool
	}{
		{"another ID only", func(p *wire.Plan) { p.ID = 9 }, true},
		{"other windows", func(p *wire.Plan) { p.Devices[0].Windows[0].End, p.Devices[1].Windows[0].Start = 1, 1 }, false},
		{"another device", func(p *wire.Plan) { p.Devices[1].ID = deviceid.ForName("x") }, false},
		{"release set", func(p *wire.Plan) { p.Devices[1].Release = true }, false},
		{"GPU layers moved", func(p *wire.Plan) { p.Devices[1].GPULayers = 1 }, false},
		{"another k", func(p *wire.Plan) { p.K = 2 }, false},
		{"hidden states in F16", func(p *wire.Plan) { p.DType = wire.F16 }, false},
		{"a device fewer", func(p *wire.Plan) { p.Devices = p.Devices[:1] }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := base()
			tt.change(p)
			if got := SamePlacement(base(), p); got != tt.want {
				t.Errorf("SamePlacement = %v, want %v", got, tt.want)
			}
		})
	}
	if SamePlacement(nil, base()) || SamePlacement(base(), nil) {
		t.Error("SamePlacement with no plan = true, want false")
	}
}
