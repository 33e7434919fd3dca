package agent

import (
	"testing"
	"time"

	"homering/app/api/apitype"
	"homering/discovery/deviceid"
	"homering/engine/runner"
	"homering/halda"
	"homering/halda/lpsolve"
)

func TestQuickProfileSolves(t *testing.T) {
	d := quickProfile()
	d.Name = "me"
	if d.RAMAvailable <= 0 || d.CPUReadBytesPerSec <= 0 {
		t.Fatalf("quick profile %+v", d)
	}
	m := halda.Model{Layers: 4, LayerBytes: map[string]int64{"q8_0": 1 << 20}, LayerFlops: map[string]float64{"q8_0": 1e6}, Vocab: 100}
	pl, err := halda.Solve(halda.Problem{Devices: []halda.Device{d}, Model: m}, lpsolve.Solver{})
	if err != nil || len(pl.Ring) != 1 || pl.Ring[0].W != 4 {
		t.Errorf("Halda on the quick profile: %+v, %v; want the 4 layers on it", pl.Ring, err)
	}
}

// The runner's transfer reports become one progress bar per worker, named
// after the device, gone once all its weights arrived or the reply ended.
func TestTransferProgress(t *testing.T) {
	b := &Agent{work: NewWork()}
	kitchen, garage := deviceid.ForName("kitchen"), deviceid.ForName("garage pc")
	job := &ringJob{names: map[deviceid.ID]apitype.Peer{kitchen: {Name: "kitchen"}}}
	report, end := b.transferProgress(job)
	report(runner.Progress{Device: kitchen, Done: 40, Total: 100})
	report(runner.Progress{Device: garage, Done: 5, Total: 50})
	got := b.work.List(time.Now())
	if len(got) != 2 {
		t.Fatalf("tasks %+v, want two transfers", got)
	}
	byID := map[string]apitype.Task{}
	for _, task := range got {
		byID[task.ID] = task
	}
	if k := byID["transfer:"+kitchen.String()]; k.Title != "Sending weights to kitchen" || k.Kind != "transfer" || k.Done != 40 || k.Total != 100 {
		t.Errorf("kitchen's bar: %+v", k)
	}
	if g := byID["transfer:"+garage.String()]; g.Title != "Sending weights to "+garage.Short() {
		t.Errorf("an unnamed device's bar: %+v", g)
	}
	report(runner.Progress{Device: kitchen, Done: 100, Total: 100})
	if got := b.work.List(time.Now()); len(got) != 1 || got[0].ID != "transfer:"+garage.String() {
		t.Errorf("after kitchen got everything: %+v", got)
	}
	end()
	if got := b.work.List(time.Now()); len(got) != 0 {
		t.Errorf("after the reply: %+v", got)
	}
}
