package app

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/app/api"
	"homering/app/api/apitype"
	"homering/engine/profile"
	"homering/engine/runner"
	"homering/halda"
	"homering/halda/lpsolve"
)

func testProfile(at time.Time, flops float64) profile.Profile {
	return profile.Profile{Version: profile.Version, Key: "k-" + at.Format("150405"), MeasuredAt: at, OS: "linux", CPUs: 2, Threads: 1,
		CPUFlops: map[string]float64{"f32": flops}, CPUReadBytesPerSec: 1e10, MemReadBytesPerSec: 1e10}
}

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

// TestAdopt: the last plan stays for the same request shape unless a device
// of it is gone, the new one is a clear gain with both scored under this
// request's profiles, or every device was asked for and the last lacks some.
func TestAdopt(t *testing.T) {
	// Three CPUs on 5 ms links; a 6-layer model of 1 GB, 1 GFLOP layers:
	// at speed 1 a layer takes 20 ms (compute + reading it).
	problem := func(speed map[string]float64, names ...string) halda.Problem {
		p := halda.Problem{Model: halda.Model{Name: "m", Layers: 6, Vocab: 1,
			LayerBytes: map[string]int64{"f16": 1e9}, LayerFlops: map[string]float64{"f16": 1e9}}}
		for _, n := range names {
			d := halda.Device{Name: n, OS: halda.Linux, RAMAvailable: 100e9, DiskSeqBytesPerSec: 1e9, DiskRandBytesPerSec: 1e9,
				CPUFlops: map[string]float64{"f16": 100e9 * speed[n]}, CPUReadBytesPerSec: 100e9 * speed[n], LinkSec: map[string]float64{}}
			for _, o := range names {
				if o != n {
					d.LinkSec[o] = 5e-3
				}
			}
			p.Devices = append(p.Devices, d)
		}
		return p
	}
	even := map[string]float64{"a": 1, "b": 1, "c": 1}
	solve := func(p halda.Problem) halda.Plan {
		t.Helper()
		pl, err := halda.Solve(p, lpsolve.Solver{})
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	order := func(pl halda.Plan) []string {
		var out []string
		for _, a := range pl.Ring {
			out = append(out, a.Device)
		}
		return out
	}
	forced := func(p halda.Problem) halda.Problem { p.KeepAllDevices = true; return p }

	now := forced(problem(even, "a", "b", "c"))
	last := solve(now)
	// The same layers with the workers the other way round: a tie.
	swapped := last
	swapped.Ring = slices.Clone(last.Ring)
	swapped.Ring[1], swapped.Ring[2] = swapped.Ring[2], swapped.Ring[1]
	swapped, err := halda.Rescore(now, swapped)
	if err != nil {
		t.Fatal(err)
	}
	// The last plan as made when calibration had every device at half
	// speed: its prediction then is twice what it is now.
	stale := solve(forced(problem(map[string]float64{"a": 0.5, "b": 0.5, "c": 0.5}, "a", "b", "c")))
	// b at a quarter speed now: a plan giving it fewer layers is a clear gain.
	slowB := forced(problem(map[string]float64{"a": 1, "b": 0.25, "c": 1}, "a", "b", "c"))
	if gain := solve(slowB); cmp.Equal(order(gain), order(last)) && gain.Ring[1].W == last.Ring[1].W && gain.K == last.K {
		t.Fatalf("b at a quarter speed did not move layers: %+v", gain.Ring)
	}
	if stale.PredictedMs < 1.5*last.PredictedMs {
		t.Fatalf("the stale plan predicts %.1f ms, not well above the %.1f ms of now", stale.PredictedMs, last.PredictedMs)
	}
	tests := []struct {
		name      string
		key       string
		p         halda.Problem
		last      halda.Plan
		cand      halda.Plan
		wantOrder []string // the ring of the plan returned
		wantMs    float64  // and its prediction
	}{
		{"a tie: keep the last", "k", now, last, swapped, order(last), last.PredictedMs},
		{"a stale prediction is scored again: keep the last", "k", now, stale, swapped, order(stale), last.PredictedMs},
		{"a clear gain: take the new", "k", slowB, last, solve(slowB), order(solve(slowB)), solve(slowB).PredictedMs},
		{"a device of the last is gone", "k", forced(problem(even, "a", "c")), last, solve(forced(problem(even, "a", "c"))), []string{"a", "c"}, solve(forced(problem(even, "a", "c"))).PredictedMs},
		{"another request shape", "other", now, last, swapped, order(swapped), swapped.PredictedMs},
		{"every device asked for, the last lacks some", "k", forced(problem(even, "a", "b", "c")), solve(problem(even, "a", "b")), swapped, order(swapped), swapped.PredictedMs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &chatBackend{}
			b.ring.key, b.ring.plan = "k", tt.last
			got := b.adopt(tt.key, tt.p, tt.cand)
			if diff := cmp.Diff(tt.wantOrder, order(got)); diff != "" {
				t.Errorf("ring of the plan returned (-want +got):\n%s", diff)
			}
			if math.Abs(got.PredictedMs-tt.wantMs) > 1e-9*tt.wantMs {
				t.Errorf("its prediction %.6f ms, want %.6f", got.PredictedMs, tt.wantMs)
			}
		})
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

func TestPersonText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ggml: gguf: the file ends early (cut at 100 of 2000 bytes).", "the file ends early (cut at 100 of 2000 bytes)."},
		{"open /m.gguf: no such file or directory", "open /m.gguf: no such file or directory"},
		{"runner: the ring lost every worker", "the ring lost every worker"},
		{"plain sentence", "plain sentence"},
	} {
		if got := personText(tc.in); got != tc.want {
			t.Errorf("personText(%q) = %q, want %q", tc.in, got, tc.want)
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
