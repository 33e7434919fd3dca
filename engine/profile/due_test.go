package profile

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDue(t *testing.T) {
	now := time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	entry := func(threads int, age time.Duration, types ...string) Profile {
		p := Profile{Threads: threads, MeasuredAt: now.Add(-age), CPUFlops: map[string]float64{}}
		for _, k := range types {
			p.CPUFlops[k] = 1e9
		}
		return p
	}
	tests := []struct {
		name    string
		entries []Profile
		threads int
		types   []string
		want    string
	}{
		{name: "nothing cached", threads: 1, types: []string{"q4_k"}, want: "this device has not been measured yet"},
		{name: "fresh and complete", entries: []Profile{entry(1, day, "q4_k", "f32")}, threads: 1, types: []string{"q4_k", "f32"}, want: ""},
		{name: "no model: any fresh one", entries: []Profile{entry(2, time.Hour)}, threads: 2, want: ""},
		{name: "other thread count", entries: []Profile{entry(2, day, "q4_k")}, threads: 1, types: []string{"q4_k"},
			want: "this device has not been measured with 1 thread(s)"},
		{name: "older than the limit", entries: []Profile{entry(1, 9*day, "q4_k"), entry(1, 8*day, "q4_k")}, threads: 1, types: []string{"q4_k"},
			want: "the last measurement is 8 days old"},
		{name: "lacks a type", entries: []Profile{entry(1, day, "q4_k", "f32")}, threads: 1, types: []string{"f32", "iq2_xs", "q4_k"},
			want: "the last measurement lacks iq2_xs"},
		{name: "an old complete one does not serve a fresh incomplete one", entries: []Profile{entry(1, 30*day, "q5_0"), entry(1, day, "q4_k")},
			threads: 1, types: []string{"q5_0"}, want: "the last measurement lacks q5_0"},
		{name: "one of several serves", entries: []Profile{entry(1, 30*day, "q5_0"), entry(2, day, "q5_0"), entry(1, day, "q5_0", "q4_k")},
			threads: 1, types: []string{"q5_0"}, want: ""},
		{name: "a zero rate is no rate", entries: []Profile{{Threads: 1, MeasuredAt: now, CPUFlops: map[string]float64{"q8_0": 0}}},
			threads: 1, types: []string{"q8_0"}, want: "the last measurement lacks q8_0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Due(tt.entries, now, 7*day, tt.threads, tt.types)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Due (-want +got):\n%s", diff)
			}
		})
	}
}

func TestModelTypes(t *testing.T) {
	got, err := ModelTypes(smallModel)
	if err != nil {
		t.Fatal(err)
	}
	layer, output, err := LayerShapes(smallModel)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range append(layer, *output) {
		if k := typeKey(s.Type); !slices.Contains(want, k) {
			want = append(want, k)
		}
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ModelTypes (-want +got):\n%s", diff)
	}
}

// TestMeasureProgress: every step is reported before it runs, in order, and
// the end once; a cancelled context stops the measurement at the next step.
func TestMeasureProgress(t *testing.T) {
	o := quick(smallModel)
	var steps []Step
	o.Progress = func(s Step) { steps = append(steps, s) }
	if _, err := Measure(context.Background(), o, testLog(t)); err != nil {
		t.Fatal(err)
	}
	if len(steps) < 5 {
		t.Fatalf("steps = %+v; want at least the kernels, memory, probe, disk and faults", steps)
	}
	total := steps[0].Total
	for i, s := range steps {
		if s.Done != i || s.Total != total || s.Phase == "" {
			t.Errorf("step %d = %+v; want done %d of %d with a phase", i, s, i, total)
		}
	}
	if last := steps[len(steps)-1]; last.Done != total || len(steps) != total+1 {
		t.Errorf("%d steps, last %+v; want %d and done == total at the end", len(steps), last, total+1)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.Progress = func(s Step) {
		if s.Done == 2 {
			cancel()
		}
	}
	if _, err := Measure(ctx, o, testLog(t)); !errors.Is(err, context.Canceled) {
		t.Errorf("Measure cancelled at step 2: err = %v, want context.Canceled", err)
	}
}
