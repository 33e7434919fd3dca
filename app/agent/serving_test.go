package agent

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/app/api/apitype"
	"homering/discovery/deviceid"
	"homering/engine/ring/wire"
	"homering/engine/runner"
)

func TestServingJob(t *testing.T) {
	head, other := deviceid.ForName("kitchen"), deviceid.ForName("study")
	peers := apitype.Peers{Peers: []apitype.Peer{{ID: other, Name: "Study"}, {ID: head, Name: "Kitchen"}}}
	since := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	if got := servingJob(nil, peers); got != nil {
		t.Errorf("no job: %+v, want nil", got)
	}
	j := &runner.Serving{Job: 9, Head: head, Windows: []wire.Range{{Start: 11, End: 20}, {Start: 30, End: 32}}, GPULayers: 4,
		AnonBytes: 24 << 20, Pressure: 0.02, Idle: true, Since: since}
	want := &apitype.ServingJob{HeadID: head, HeadName: "Kitchen", Layers: []apitype.Window{{Start: 11, End: 20, GPU: 4}, {Start: 30, End: 32, GPU: 2}},
		MemoryBytes: 24 << 20, Pressure: 0.02, Idle: true, Since: since}
	if diff := cmp.Diff(want, servingJob(j, peers)); diff != "" {
		t.Errorf("serving job (-want +got)\n%s", diff)
	}
	// Before its plan is up, and from a head not in the list: no layers, no name.
	j = &runner.Serving{Job: 10, Head: deviceid.ForName("unknown"), Since: since}
	if got := servingJob(j, peers); got.HeadName != "" || got.Layers == nil || len(got.Layers) != 0 {
		t.Errorf("a job without a plan from an unnamed head: %+v", got)
	}
}

func TestServingHeadOnline(t *testing.T) {
	head, other := deviceid.ForName("kitchen"), deviceid.ForName("study")
	peers := apitype.Peers{Peers: []apitype.Peer{
		{ID: other, Name: "Study", Paired: true, Sources: []string{}},
		{ID: head, Name: "Kitchen", Paired: true, Sources: []string{}},
	}}
	got := withServingHead(peers, &runner.Serving{Head: head})
	if !got.Peers[1].Visible || !cmp.Equal(got.Peers[1].Sources, []string{"ring"}) || got.Peers[0].Visible {
		t.Errorf("peers while serving Kitchen: %+v, want Kitchen online through the ring and Study offline", got.Peers)
	}
	if peers.Peers[1].Visible {
		t.Error("withServingHead changed the node's list")
	}
	if got := withServingHead(peers, nil); got.Peers[1].Visible {
		t.Error("not serving, Kitchen is online")
	}
}
