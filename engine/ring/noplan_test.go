package ring

import (
	"strings"
	"testing"

	"homering/engine/ring/wire"
)

// A frame of a plan the device never installed is marked NoPlan (the
// driver counts it as a refusal); one of a plan it installed before a
// re-plan is stale, a working ring's late frame, and is not.
func TestNoPlan(t *testing.T) {
	replanned := func() *Session { // worker b: plan 1, then plan 2
		s := worker(true)
		p2 := *testPlan
		p2.ID = 2
		s.Step(FrameIn{From: tid("a"), Msg: &p2})
		return s
	}
	act := func(plan uint64) *wire.Activation {
		return &wire.Activation{Plan: plan, Layers: wire.Range{Start: 0, End: 1}, Rows: 1, NEmbd: 2, DType: wire.F32, Data: make([]byte, 8)}
	}
	tests := []struct {
		name   string
		s      *Session
		ev     Event
		noPlan bool
		reason string
	}{
		{"worker: an activation of a plan never installed", worker(true), FrameIn{From: tid("a"), Msg: act(9)}, true, "activation of plan 9, which this device never installed"},
		{"worker without a plan: an activation", New(tid("b"), testTickMs), FrameIn{From: tid("a"), Msg: act(1)}, true, "activation of plan 1, which this device never installed"},
		{"worker: an activation of the plan before the re-plan is stale", replanned(), FrameIn{From: tid("a"), Msg: act(1)}, false, "activation of plan 1, not serving it"},
		{"worker: a commit of a plan never installed", worker(false), FrameIn{From: tid("a"), Msg: &wire.Commit{Plan: 7}}, true, "commit of plan 7, which this device never installed"},
		{"worker: a commit of the plan before the re-plan is stale", replanned(), FrameIn{From: tid("a"), Msg: &wire.Commit{Plan: 1}}, false, "stale commit"},
		{"head: a plan ack of a plan never installed", head(false), FrameIn{From: tid("b"), Msg: &wire.PlanAck{Plan: 5}}, true, "plan ack of plan 5, which this device never installed"},
		{"head: a second ack of its plan is stale", head(true), FrameIn{From: tid("b"), Msg: &wire.PlanAck{Plan: 1}}, false, "stale plan ack"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acts := tt.s.Step(tt.ev)
			if len(acts) != 1 {
				t.Fatalf("actions %v, want one Dropped", acts)
			}
			d, ok := acts[0].(Dropped)
			if !ok {
				t.Fatalf("action %v, want a Dropped", acts[0])
			}
			if d.NoPlan != tt.noPlan || !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("got %v, want NoPlan %v and reason %q", d, tt.noPlan, tt.reason)
			}
		})
	}
}
