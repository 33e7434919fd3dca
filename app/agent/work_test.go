package agent

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/app/api/apitype"
)

func TestWorkList(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := NewWork()
	if got := w.List(t0); got == nil || len(got) != 0 {
		t.Fatalf("empty List = %#v, want [] (the UI reads null as no list)", got)
	}
	changed := w.Changed()
	w.Begin(t0.Add(time.Second), "load", "load", "Loading m", "Reading 1.0 GiB", 3*time.Second)
	select {
	case <-changed:
	default:
		t.Fatal("Begin did not signal a change")
	}
	w.Begin(t0, "transfer:b", "transfer", "Weights to b", "", 0)
	w.Progress(t0.Add(2*time.Second), "transfer:b", 40, 100)
	w.Progress(t0.Add(2*time.Second), "profile", 1, 3) // not begun: begun by Progress
	want := []apitype.Task{
		{ID: "transfer:b", Kind: "transfer", Title: "Weights to b", ElapsedMs: 4000, Done: 40, Total: 100},
		{ID: "load", Kind: "load", Title: "Loading m", Detail: "Reading 1.0 GiB", ElapsedMs: 3000, ExpectedMs: 3000},
		{ID: "profile", Kind: "profile", Title: "profile", ElapsedMs: 2000, Done: 1, Total: 3},
	}
	if diff := cmp.Diff(want, w.List(t0.Add(4*time.Second))); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	changed = w.Changed()
	w.End("load")
	w.End("nothing") // no-op
	select {
	case <-changed:
	default:
		t.Fatal("End did not signal a change")
	}
	if got := len(w.List(t0)); got != 2 {
		t.Errorf("after End: %d tasks, want 2", got)
	}
}

func TestWorkSteps(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := NewWork()
	w.Steps(t0, "profile", "profile", "Measuring this device (0/9)", "CPU kernels: q4_k", 0, 9)
	changed := w.Changed()
	w.Steps(t0.Add(time.Second), "profile", "profile", "Measuring this device (3/9)", "memory bandwidth", 3, 9)
	select {
	case <-changed:
	default:
		t.Fatal("Steps did not signal a change")
	}
	want := []apitype.Task{{ID: "profile", Kind: "profile", Title: "Measuring this device (3/9)", Detail: "memory bandwidth",
		ElapsedMs: 2000, Done: 3, Total: 9, Unit: "steps"}}
	if diff := cmp.Diff(want, w.List(t0.Add(2*time.Second))); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
}
