package agent

import (
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"homering/app/planner"
	"homering/engine/profile/modelprof"
	"homering/engine/runner"
)

// TestPlannerUsesMeasuredRouting: the routing a ring job kept in the config
// directory (engine/ring/job) is what the agent's planner gives Halda: its
// hot set is the always-read bytes plus the experts routed above the mean,
// where before it the plan was uniform (no hot expert).
func TestPlannerUsesMeasuredRouting(t *testing.T) {
	model, err := filepath.Abs("../../testdata/models/qwen3moe-F32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	b := &Agent{sup: runner.New(runner.Options{Command: func() *exec.Cmd { return testChild("runner") }, Log: log}),
		dir: t.TempDir(), threads: 1, log: log, selfName: "self", running: map[*chatRun]struct{}{}}
	t.Cleanup(func() { b.Close() })
	plan := func() planner.Plan {
		t.Helper()
		pl, err := b.plans().Next(planner.Request{Model: model, ContextTokens: 256, Alone: true})
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	uniform := plan().Problem.Model
	if !strings.HasPrefix(uniform.Routing, "uniform") {
		t.Fatalf("without measured routing the plan's routing is %q", uniform.Routing)
	}
	id, err := modelprof.ModelID(model)
	if err != nil {
		t.Fatal(err)
	}
	// A head that ran layers 0 and 1: expert 0 picked 3 times as often as
	// each other one (top-2 of 8: 10 tokens).
	skewed := []int64{6, 2, 2, 2, 2, 2, 2, 2}
	if err := modelprof.AddRouting(modelprof.RoutingDir(b.dir), id, 4, 0, [][]int64{skewed, skewed}); err != nil {
		t.Fatal(err)
	}
	measured := plan().Problem.Model
	if !strings.HasPrefix(measured.Routing, "measured") {
		t.Fatalf("with measured routing kept the plan's routing is %q", measured.Routing)
	}
	// Layers 0 and 1 add expert 0 to the hot set; 2 and 3 are uniform.
	expert := uniform.LayerExpertBytes / 8
	if got, want := measured.LayerHotBytes-uniform.LayerHotBytes, 2*expert/4; got < want-1 || got > want+1 {
		t.Errorf("hot set grew by %d bytes a layer, want %d (one expert in half the layers)", got, want)
	}
	if !(measured.ColdReadRate < uniform.ColdReadRate) {
		t.Errorf("cold rate %v with a hot expert, want less than uniform's %v", measured.ColdReadRate, uniform.ColdReadRate)
	}
}
