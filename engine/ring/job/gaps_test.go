package job

import (
	"testing"

	"homering/discovery/deviceid"
	"homering/engine/ring"
	"homering/engine/ring/wire"
)

// A head's job leaves each worker's measured times for the next job's
// stall bounds: per token all its windows (rounded up), per prompt row;
// a worker that computed no token leaves nothing.
func TestGapsKeepExpectations(t *testing.T) {
	a, b := deviceid.ID{1}, deviceid.ID{2}
	var g Gaps
	g.measured(map[deviceid.ID]wire.DeviceStats{
		a: {Tokens: 3, ComputeUS: 30_500, PromptUS: 64_000, PromptRows: 32},
		b: {Tokens: 0, ComputeUS: 9_000},
	})
	if got, want := g.expect[a], (ring.Expectation{DecodeMs: 10, RowMs: 2}); got != want {
		t.Errorf("a's expectation %+v, want %+v", got, want)
	}
	if _, ok := g.expect[b]; ok {
		t.Errorf("b computed no token, yet left an expectation %+v", g.expect[b])
	}
	// A later job measures a again: the newer times replace the older.
	g.measured(map[deviceid.ID]wire.DeviceStats{a: {Tokens: 2, ComputeUS: 8_000}})
	if got, want := g.expect[a], (ring.Expectation{DecodeMs: 4}); got != want {
		t.Errorf("a's expectation after a second job %+v, want %+v", got, want)
	}
}
