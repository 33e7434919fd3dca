package driver

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/engine/ggml"
	"homering/engine/ring/ggmlengine"
	"homering/engine/ring/wire"
	"homering/engine/slice"
)

// A worker whose layers lie in two slice files (as after a re-plan: a
// cached slice and one with the layers it lacked) runs each window as
// sub-windows over both and gives the single-device engine's tokens, for a
// window spanning both files (k = 1) and windows in one file each (k = 2,
// with Release on).
func TestPartsEqualSingleDevice(t *testing.T) {
	want := reference(t)
	ctx := context.Background()
	srv, err := slice.NewServer(stories)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, head := link(t, "worker", "head")
	go func() { _ = srv.Serve(ctx, head) }()
	src := &slice.ConnSource{C: c, Model: srv.Model}
	g, hashes, err := src.FetchIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	open := func(rs ...slice.Range) *ggml.Model {
		t.Helper()
		res, err := (&slice.Builder{Dir: dir}).Build(ctx, slice.Spec{Model: srv.Model, Source: g, Hashes: hashes, Layers: rs}, src)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ggml.Open(res.Path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	a13, a35 := open(slice.Range{Start: 1, End: 3}), open(slice.Range{Start: 3, End: 5})
	parts := []ggmlengine.Part{{First: 1, Last: 3, M: a13}, {First: 3, Last: 5, M: a35}}
	for _, tt := range []struct {
		name string
		plan *wire.Plan
	}{
		{"k=1 window across two files", &wire.Plan{ID: 1, K: 1, Devices: []wire.Device{
			{ID: tid("a"), Windows: []wire.Range{rg(0, 2)}},
			{ID: tid("b"), Windows: []wire.Range{rg(2, 5)}}}}},
		{"k=2 a window in each file", &wire.Plan{ID: 2, K: 2, Devices: []wire.Device{
			{ID: tid("a"), Windows: []wire.Range{rg(0, 1), rg(2, 4)}},
			{ID: tid("b"), Release: true, Windows: []wire.Range{rg(1, 2), rg(4, 5)}}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ma := openModel(t)
			ea, eb := &ggmlengine.GGML{M: ma, NCtx: 64, Threads: 1}, &ggmlengine.GGML{Parts: parts, NCtx: 64, Threads: 1}
			defer ea.Close()
			defer eb.Close()
			got := twoDeviceTokens(t, tt.plan, ma.Info(), ea, eb)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tokens (-single device +ring over parts)\n%s", diff)
			}
		})
	}
}
