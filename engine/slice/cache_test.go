package slice

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCover(t *testing.T) {
	a := Cached{Path: "a", Layers: []Range{{0, 4}}}
	b := Cached{Path: "b", Layers: []Range{{2, 8}}}
	c := Cached{Path: "c", Layers: []Range{{3, 5}, {10, 12}}}
	for _, tt := range []struct {
		name        string
		need        []Range
		have        []Cached
		wantPieces  []Piece
		wantMissing []Range
	}{
		{"empty cache: everything is missing", []Range{{2, 6}}, nil,
			[]Piece{{Range: Range{2, 6}}}, []Range{{2, 6}}},
		{"one slice holds it all", []Range{{3, 7}}, []Cached{a, b},
			[]Piece{{Range{3, 7}, "b"}}, nil},
		{"the longest run wins", []Range{{1, 8}}, []Cached{a, c, b},
			[]Piece{{Range{1, 4}, "a"}, {Range{4, 8}, "b"}}, nil},
		{"a re-plan grows the window downwards", []Range{{0, 8}}, []Cached{b},
			[]Piece{{Range: Range{0, 2}}, {Range{2, 8}, "b"}}, []Range{{0, 2}}},
		{"gaps between held runs", []Range{{8, 14}}, []Cached{c},
			[]Piece{{Range: Range{8, 10}}, {Range{10, 12}, "c"}, {Range: Range{12, 14}}}, []Range{{8, 10}, {12, 14}}},
		{"k = 2: two windows, missing runs of both", []Range{{1, 3}, {9, 11}}, []Cached{a},
			[]Piece{{Range{1, 3}, "a"}, {Range: Range{9, 11}}}, []Range{{9, 11}}},
		{"a run stops at the window's end", []Range{{4, 6}, {6, 9}}, []Cached{b},
			[]Piece{{Range{4, 6}, "b"}, {Range{6, 8}, "b"}, {Range: Range{8, 9}}}, []Range{{8, 9}}},
		{"on a tie the first slice", []Range{{3, 4}}, []Cached{c, a},
			[]Piece{{Range{3, 4}, "c"}}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pieces, missing := Cover(tt.need, tt.have)
			if diff := cmp.Diff(tt.wantPieces, pieces); diff != "" {
				t.Errorf("pieces (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantMissing, missing); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVictims(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	es := []entry{
		{bytes: 400, used: at(3)},
		{bytes: 300, used: at(1)},
		{bytes: 200, used: at(2), keep: true},
		{bytes: 100, used: at(4)},
		{bytes: 500, used: at(0), keep: true},
	}
	const lots = 1 << 40
	for _, tt := range []struct {
		name                  string
		free, maxBytes, minFr int64
		want                  []int
	}{
		{"within bounds: nothing", lots, 1500, 1 << 30, nil},
		{"over size: least recently used first", lots, 1200, 1 << 30, []int{1}},
		{"further over: more, never kept ones", lots, 800, 1 << 30, []int{1, 0}},
		{"only kept ones left", lots, 0, 1 << 30, []int{1, 0, 3}},
		{"low disk: free enough", 100, 1 << 40, 500, []int{1, 0}},
		{"both bounds", 1000, 1400, 1200, []int{1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, victims(es, tt.free, tt.maxBytes, tt.minFr)); diff != "" {
				t.Errorf("victims (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBudget(t *testing.T) {
	for _, tt := range []struct {
		name           string
		job, cap, want int64
	}{
		{"no cap: the default", 100, 0, DefaultCap},
		{"a big job: twice its slices", 3 << 30, 0, 6 << 30},
		{"a configured cap above", 1 << 30, 5 << 30, 5 << 30},
	} {
		if got := Budget(tt.job, tt.cap); got != tt.want {
			t.Errorf("%s: Budget(%d, %d) = %d, want %d", tt.name, tt.job, tt.cap, got, tt.want)
		}
	}
}

// A cache of real slices: Slices lists those of one model with their
// layers, Cover finds layers in them, Prune removes the least recently used
// ones but never one in use, a part file being built or a stranger's file.
func TestCacheSlicesAndPrune(t *testing.T) {
	src, spec := open(t, stories)
	dir := t.TempDir()
	b := &Builder{Dir: dir}
	build := func(s Spec, rs ...Range) string {
		t.Helper()
		s.Layers = rs
		res, err := b.Build(context.Background(), s, src)
		if err != nil {
			t.Fatal(err)
		}
		return res.Path
	}
	p01, p23, p34 := build(spec, Range{0, 1}), build(spec, Range{2, 3}), build(spec, Range{3, 5})
	other := spec
	other.Model[0] ^= 1
	pOther := build(other, Range{0, 5})
	t0 := time.Now()
	now := t0
	c := &Cache{Dir: dir, now: func() time.Time { return now }, free: func(string) (int64, error) { return 1 << 40, nil }}
	// Use order: other, 34, 01, 23 (most recent).
	for i, p := range []string{pOther, p34, p01, p23} {
		now = t0.Add(time.Duration(i) * time.Hour)
		c.Touch(p)
	}
	got := c.Slices(spec.Model)
	want := []Cached{{Path: p01, Layers: []Range{{0, 1}}}, {Path: p23, Layers: []Range{{2, 3}}}, {Path: p34, Layers: []Range{{3, 5}}}}
	slices.SortFunc(want, func(a, b Cached) int { return strings.Compare(a.Path, b.Path) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Slices (-want +got):\n%s", diff)
	}
	pieces, missing := Cover([]Range{{1, 5}}, got)
	if diff := cmp.Diff([]Piece{{Range: Range{1, 2}}, {Range{2, 3}, p23}, {Range{3, 5}, p34}}, pieces); diff != "" || !slices.Equal(missing, []Range{{1, 2}}) {
		t.Errorf("Cover: missing %v, pieces (-want +got):\n%s", missing, diff)
	}

	// A part file of an interrupted build (old), one being built (just
	// written) and a file the cache does not manage.
	now = t0.Add(10 * time.Hour)
	oldPart := filepath.Join(dir, "0123456789abcdef-0123456789abcdef.gguf.part")
	newPart := filepath.Join(dir, "fedcba9876543210-0123456789abcdef.gguf.part")
	stranger := filepath.Join(dir, "notes.txt")
	for _, p := range []string{oldPart, oldPart + ".done", newPart, stranger} {
		if err := os.WriteFile(p, make([]byte, 1000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(oldPart, t0.Add(-time.Hour), t0.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(newPart, now.Add(-time.Minute), now.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	size := func(p string) int64 {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	// Room for the slice in use and the most recent other one only: the
	// old part file, the other model's slice and 01 go, in that order; 34
	// is in use.
	keep := []string{p34}
	pr, err := c.Prune(keep, size(p34)+size(p23)+1000, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{oldPart, pOther, p01}, pr.Removed); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	for _, p := range []string{p34, p23, newPart, stranger} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s should be left: %v", filepath.Base(p), err)
		}
	}
	if _, err := os.Stat(oldPart + ".done"); !os.IsNotExist(err) {
		t.Errorf("the removed part file's done log is left: %v", err)
	}
	if want := size(p34) + size(p23) + 1000; pr.Left != want {
		t.Errorf("left %d bytes, want %d", pr.Left, want)
	}

	// A disk short of space: everything not in use goes, least recently
	// used first, but the part file being built stays.
	c.free = func(string) (int64, error) { return 10, nil }
	pr, err = c.Prune(keep, 1<<40, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{p23}, pr.Removed); diff != "" {
		t.Errorf("removed on a full disk (-want +got):\n%s", diff)
	}
	if got := c.Slices(spec.Model); len(got) != 1 || got[0].Path != p34 {
		t.Errorf("after pruning the cache lists %+v, want only the slice in use", got)
	}
}
