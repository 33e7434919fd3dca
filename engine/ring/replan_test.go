package ring

import (
	"slices"
	"testing"

	"homering/discovery/deviceid"
	"homering/halda"
	"homering/halda/haldatest"
)

// A re-plan is Halda over the calibrated problem less the lost devices,
// with a fixed k dropped once it no longer leaves every device a layer per
// round; the head is never planned without.
func TestPlanWithout(t *testing.T) {
	devs, err := haldatest.Devices("devices.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := haldatest.Model("llama3-8b-q4k.json") // 32 layers
	if err != nil {
		t.Fatal(err)
	}
	m.ContextTokens = 1024
	for i := range devs {
		devs[i].ID = tid(devs[i].Name) // a ring's devices have IDs; gone names them
	}
	ids := func(names ...string) []deviceid.ID {
		var out []deviceid.ID
		for _, n := range names {
			out = append(out, tid(n))
		}
		return out
	}
	tests := []struct {
		name      string
		rounds    int
		gone      []deviceid.ID
		want      []string // the devices of the new problem
		wantK     int      // 0: Halda's choice
		wantError bool
	}{
		{name: "one worker lost", gone: ids("D3"), want: []string{"D1", "D2", "D4"}},
		{name: "every worker lost: the head alone", gone: ids("D2", "D3", "D4"), want: []string{"D1"}},
		{name: "a device not in the problem changes nothing", gone: ids("X"), want: []string{"D1", "D2", "D3", "D4"}},
		{name: "k kept while the devices left hold a layer per round", rounds: 8, gone: ids("D4"), want: []string{"D1", "D2", "D3"}, wantK: 8},
		// 16 rounds of 32 layers leave a window of 2 layers per round: not
		// one for each of three devices.
		{name: "k given up when they could not", rounds: 16, gone: ids("D4"), want: []string{"D1", "D2", "D3"}},
		{name: "the head cannot be lost", gone: ids("D1"), wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prob := halda.Problem{Devices: devs, Model: m, DefaultLinkSec: 1e-3, KeepAllDevices: true, HeadHoldsLayers: true, Rounds: tt.rounds}
			q, plan, err := PlanWithout(prob, tt.gone, haldatest.DP{})
			if tt.wantError {
				if err == nil {
					t.Fatalf("re-planned without the head: %+v", plan)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range q.Devices {
				got = append(got, d.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("problem's devices %v, want %v", got, tt.want)
			}
			if q.Rounds != tt.wantK {
				t.Errorf("problem's rounds %d, want %d", q.Rounds, tt.wantK)
			}
			if tt.wantK > 0 && plan.K != tt.wantK {
				t.Errorf("plan k = %d, want %d", plan.K, tt.wantK)
			}
			for _, a := range plan.Ring {
				if slices.Contains(tt.gone, a.ID) {
					t.Errorf("the plan gives %s layers: %+v", a.Device, plan.Ring)
				}
			}
			if plan.Ring[0].Device != "D1" {
				t.Errorf("the plan's head is %s, want D1", plan.Ring[0].Device)
			}
		})
	}
}
