package modelprof

import (
	"errors"
	"os"
	"slices"
	"testing"

	"homering/internal/testdir"
)

// TestRoutingStore: counts of a window's layers add up across runs in
// the right layers, a file of another model or a damaged one is not
// trusted (and a new run starts afresh), Filled gives layers never
// counted uniform counts, and a layer's counts halve past routingDecay.
func TestRoutingStore(t *testing.T) {
	dir := testdir.Scratch(t)
	a, b := [32]byte{1}, [32]byte{2}
	if _, err := LoadRouting(dir, a); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("no file: err %v, want not exist", err)
	}
	if err := AddRouting(dir, a, 4, 1, [][]int64{{3, 1, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	if err := AddRouting(dir, a, 4, 1, [][]int64{{1, 1, 0, 0}, {2, 2, 2, 2}}); err != nil {
		t.Fatal(err)
	}
	r, err := LoadRouting(dir, a)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int64{{0, 0, 0, 0}, {4, 2, 0, 0}, {2, 2, 2, 2}, {0, 0, 0, 0}}
	for i := range want {
		if !slices.Equal(r.Counts[i], want[i]) {
			t.Fatalf("counts %v, want %v", r.Counts, want)
		}
	}
	if r.Picks() != 14 {
		t.Errorf("picks %d, want 14", r.Picks())
	}
	f := r.Filled()
	for _, i := range []int{0, 3} {
		if !slices.Equal(f.Counts[i], []int64{1, 1, 1, 1}) { // 7 picks a counted layer / 4 experts
			t.Errorf("filled layer %d: %v, want uniform 1s", i, f.Counts[i])
		}
	}
	if !slices.Equal(f.Counts[1], want[1]) {
		t.Errorf("filled layer 1: %v, want it as counted", f.Counts[1])
	}
	if (&Routing{Counts: [][]int64{{0, 0}}}).Filled() != nil {
		t.Error("Filled of nothing counted is not nil")
	}
	if err := AddRouting(dir, a, 4, 3, [][]int64{{1}, {1}}); err == nil {
		t.Error("counts past the last layer accepted")
	}

	// Another model's file under a's name, then a damaged one.
	if err := AddRouting(dir, b, 4, 0, [][]int64{{1, 1, 1, 1}}); err != nil {
		t.Fatal(err)
	}
	bf, err := os.ReadFile(routingPath(dir, b))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"another model's": bf, "damaged": bf[:len(bf)/2]} {
		if err := os.WriteFile(routingPath(dir, a), content, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadRouting(dir, a); err == nil || errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s file: err %v, want it untrusted", name, err)
		}
	}
	if err := AddRouting(dir, a, 4, 0, [][]int64{{routingDecay, 2, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	if r, err := LoadRouting(dir, a); err != nil || !slices.Equal(r.Counts[0], []int64{routingDecay / 2, 1, 0, 0}) || r.Picks() != routingDecay/2+1 {
		t.Errorf("after a damaged file and counts past the decay: %v, %v", r, err)
	}
}
