package app

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"homering/app/api"
	"homering/app/api/apitype"
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

func TestChatArgs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no prompt", []string{"-m", "x.gguf"}, "give a prompt"},
		{"devices other than all", []string{"--devices", "some", "hi"}, `--devices takes only "all"`},
		{"negative rounds", []string{"--rounds", "-1", "hi"}, "--rounds must be 1 or more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := mainWith(append([]string{"chat"}, tt.args...), env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb})
			if code != 2 || !strings.Contains(errb.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errb.String(), tt.want)
			}
		})
	}
}

func TestPrintRing(t *testing.T) {
	rtt := 0.25
	r := &apitype.RingRun{K: 2, Layers: 6, PredictedMs: 2.5, MeasuredMs: 6.25, Replans: 1, Lost: []string{"gone"}, LossToTokenMs: 40,
		Devices: []apitype.RingDevice{
			{Short: "AAAAAAA", Name: "desk", Case: "M4", Windows: []apitype.Window{{Start: 0, End: 1}, {Start: 3, End: 4}}, PredictedMs: 1, MeasuredMs: 1.5, MemPressure: 0.02, Profile: "measured"},
			{Short: "BBBBBBB", Name: "attic", Case: "M3", Windows: []apitype.Window{{Start: 1, End: 3}, {Start: 4, End: 6}}, PredictedMs: 1.5, MeasuredMs: 2, MemPressure: 0.5, RTTMs: &rtt, Profile: "default"},
		}}
	var b bytes.Buffer
	printRing(&b, r)
	for _, want := range []string{"ring: 2 devices, k=2, 6 layers, predicted 2.5 ms/token, measured 6.2 ms/token; 1 re-plan(s) after losing gone, loss to next token 40.0 ms",
		"AAAAAAA (head)", "0 3", "1-2 4-5", "50.0%", "0.250", "measured", "default"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}

// The runner's transfer reports become one progress bar per worker, named
// after the device, gone once all its weights arrived or the reply ended.
func TestTransferProgress(t *testing.T) {
	b := &chatBackend{work: api.NewWork()}
	job := &ringJob{names: map[string]apitype.Peer{"KITCHEN-ID": {Name: "kitchen"}}}
	report, end := b.transferProgress(job)
	report(runner.Progress{Device: "KITCHEN-ID", Done: 40, Total: 100})
	report(runner.Progress{Device: "GARAGEPC-ID", Done: 5, Total: 50})
	got := b.work.List(time.Now())
	if len(got) != 2 {
		t.Fatalf("tasks %+v, want two transfers", got)
	}
	byID := map[string]apitype.Task{}
	for _, task := range got {
		byID[task.ID] = task
	}
	if k := byID["transfer:KITCHEN-ID"]; k.Title != "Sending weights to kitchen" || k.Kind != "transfer" || k.Done != 40 || k.Total != 100 {
		t.Errorf("kitchen's bar: %+v", k)
	}
	if g := byID["transfer:GARAGEPC-ID"]; g.Title != "Sending weights to GARAGEP" {
		t.Errorf("an unnamed device's bar: %+v", g)
	}
	report(runner.Progress{Device: "KITCHEN-ID", Done: 100, Total: 100})
	if got := b.work.List(time.Now()); len(got) != 1 || got[0].ID != "transfer:GARAGEPC-ID" {
		t.Errorf("after kitchen got everything: %+v", got)
	}
	end()
	if got := b.work.List(time.Now()); len(got) != 0 {
		t.Errorf("after the reply: %+v", got)
	}
}
