package ring

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

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
				{Device: "head", Case: halda.M4, W: 3, Layers: []halda.LayerRange{lr(0, 3), lr(4, 7)}},
				{Device: "laptop", Case: halda.M3, W: 1, Layers: []halda.LayerRange{lr(3, 4), lr(7, 8)}},
			}},
			want: &wire.Plan{ID: 5, K: 2, Layers: 8, NEmbd: 64, DType: wire.F32, Devices: []wire.Device{
				{ID: "head", Windows: []wire.Range{wr(0, 3), wr(4, 7)}},
				{ID: "laptop", Release: true, Windows: []wire.Range{wr(3, 4), wr(7, 8)}},
			}},
		},
		{
			name: "windows with a gap",
			plan: halda.Plan{K: 1, Ring: []halda.Assignment{
				{Device: "a", Case: halda.M4, Layers: []halda.LayerRange{lr(0, 3)}},
				{Device: "b", Case: halda.M4, Layers: []halda.LayerRange{lr(4, 8)}},
			}},
			wantErr: wire.ErrMalformed,
		},
		{name: "empty plan", plan: halda.Plan{K: 1}, wantErr: wire.ErrMalformed},
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
