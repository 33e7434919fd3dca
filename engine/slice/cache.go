package slice

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"homering/engine/gguf"
)

// Bounds of a worker's cache (see Budget and Cache.Prune).
const (
	// DefaultCap is the cache's allowance when the worker configures none:
	// what it may keep beyond twice the current job's slice bytes.
	DefaultCap = 1 << 30
	// MinFree is the free disk space pruning leaves at least (removing
	// unused slices, least recently used first).
	MinFree = 1 << 30
	// building: a part file written to this recently may belong to a build
	// in flight (resumable part files of interrupted builds are older).
	building = 2 * time.Minute
)

// Budget is the bytes a cache may hold while a job uses jobBytes of slices:
// twice the job's slices (room for the next re-plan's) or the configured
// cap (0: DefaultCap), whichever is larger.
func Budget(jobBytes, cap int64) int64 {
	if cap <= 0 {
		cap = DefaultCap
	}
	return max(2*jobBytes, cap)
}

// Cached is a complete slice file in a cache directory.
type Cached struct {
	Path          string
	Layers        []Range // held layers, sorted and disjoint
	Input, Output bool
}

// holds returns the end of the held range containing layer l, or -1.
func (c Cached) holds(l int) int {
	for _, r := range c.Layers {
		if l >= r.Start && l < r.End {
			return r.End
		}
	}
	return -1
}

// Piece is a run of layers and the cached slice that holds it; Path is ""
// for a run no cached slice holds (to fetch into a new slice).
type Piece struct {
	Range
	Path string
}

// Cover splits need (sorted, disjoint layer ranges) into pieces held by the
// slices in have: at each layer it takes the slice holding the longest run
// from there (the fewest sub-windows; the first such slice on a tie), and
// the runs no slice holds become pieces with no path, also returned merged
// as missing: the layers of the one new slice to fetch. Input and output
// are not covered (workers hold neither).
func Cover(need []Range, have []Cached) (pieces []Piece, missing []Range) {
	for _, r := range need {
		for l := r.Start; l < r.End; {
			best, end := -1, l
			for i, c := range have {
				if e := min(c.holds(l), r.End); e > end {
					best, end = i, e
				}
			}
			if best >= 0 {
				pieces = append(pieces, Piece{Range{l, end}, have[best].Path})
				l = end
				continue
			}
			for end = l + 1; end < r.End && !heldByAny(have, end); end++ {
			}
			pieces = append(pieces, Piece{Range: Range{l, end}})
			if n := len(missing); n > 0 && missing[n-1].End == l {
				missing[n-1].End = end
			} else {
				missing = append(missing, Range{l, end})
			}
			l = end
		}
	}
	return pieces, missing
}

func heldByAny(have []Cached, l int) bool {
	for _, c := range have {
		if c.holds(l) >= 0 {
			return true
		}
	}
	return false
}

// Cache is a worker's slice cache directory: complete slices of the models
// it serves (several per model after re-plans), part files of interrupted
// builds, and nothing else it manages.
type Cache struct {
	Dir string
	// free reports the free bytes of the directory's filesystem; a seam for
	// tests, nil: statfs.
	free func(dir string) (int64, error)
	// now is the clock for Touch and the building window; nil: time.Now.
	now func() time.Time

	mu   sync.Mutex
	seen map[string]Cached // headers read, by path: a complete slice never changes
}

func (c *Cache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// Slices lists the complete slices of model in the cache, by path. A file
// whose header does not read or names another source is not listed. A
// slice's header is read once per Cache (a model's header with its
// vocabulary takes tens of milliseconds to parse): complete slices are
// never rewritten, only removed, and a rebuilt one holds what its name says.
func (c *Cache) Slices(model [32]byte) []Cached {
	paths, _ := filepath.Glob(filepath.Join(c.Dir, hex.EncodeToString(model[:8])+"-*.gguf"))
	want := hex.EncodeToString(model[:])
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]Cached{}
	}
	var out []Cached
	for _, p := range paths {
		if cs, ok := c.seen[p]; ok {
			out = append(out, cs)
			continue
		}
		g, err := gguf.Open(p)
		if err != nil {
			continue
		}
		src, _ := g.String("homering.slice.source")
		flat, _ := g.Ints("homering.slice.layers")
		if src != want || len(flat)%2 != 0 {
			continue
		}
		cs := Cached{Path: p}
		for i := 0; i < len(flat); i += 2 {
			cs.Layers = append(cs.Layers, Range{int(flat[i]), int(flat[i+1])})
		}
		cs.Input, _ = g.Bool("homering.slice.input")
		cs.Output, _ = g.Bool("homering.slice.output")
		c.seen[p] = cs
		out = append(out, cs)
	}
	return out
}

// Touch marks slices as used now (their modification time, which nothing
// else reads): pruning removes the least recently used first.
func (c *Cache) Touch(paths ...string) {
	now := c.clock()
	for _, p := range paths {
		_ = os.Chtimes(p, now, now)
	}
}

// Pruned says what Prune removed and what is left.
type Pruned struct {
	Removed []string // slice or part files, least recently used first
	Freed   int64
	Left    int64 // bytes of the cache's files after pruning
}

// entry is one prunable unit: a slice file, or a part file with its done log.
type entry struct {
	paths []string
	bytes int64
	used  time.Time
	keep  bool
}

// victims picks the entries to remove, least recently used first, until
// the cache holds at most maxBytes and the disk has at least minFree free,
// or only kept entries are left. It is pure.
func victims(es []entry, free, maxBytes, minFree int64) []int {
	var total int64
	order := make([]int, 0, len(es))
	for i, e := range es {
		total += e.bytes
		if !e.keep {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return es[order[a]].used.Before(es[order[b]].used) })
	var out []int
	for _, i := range order {
		if total <= maxBytes && free >= minFree {
			break
		}
		out = append(out, i)
		total -= es[i].bytes
		free += es[i].bytes
	}
	return out
}

// Prune removes the cache's least recently used slices (and part files of
// interrupted builds) until it holds at most maxBytes and its filesystem has
// at least minFree bytes free. It never removes a path in keep (the slices
// a job maps), nor a part file written to in the last two minutes (a build
// may be running). Files the cache does not manage are left alone.
func (c *Cache) Prune(keep []string, maxBytes, minFree int64) (Pruned, error) {
	des, err := os.ReadDir(c.Dir)
	if err != nil {
		if os.IsNotExist(err) {
			return Pruned{}, nil
		}
		return Pruned{}, fmt.Errorf("slice: read the cache: %w", err)
	}
	now := c.clock()
	var es []entry
	for _, de := range des {
		name := de.Name()
		base, part := strings.CutSuffix(name, ".part")
		if !cacheName(base) {
			continue
		}
		info, err := de.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		p := filepath.Join(c.Dir, name)
		e := entry{paths: []string{p}, bytes: info.Size(), used: info.ModTime()}
		if part {
			e.paths = append(e.paths, p+".done")
			e.keep = now.Sub(info.ModTime()) < building
		}
		e.keep = e.keep || slices.Contains(keep, p) || slices.Contains(keep, strings.TrimSuffix(p, ".part"))
		es = append(es, e)
	}
	free := int64(1) << 62
	if f := c.free; f != nil {
		free, err = f(c.Dir)
	} else {
		free, err = freeSpace(c.Dir)
	}
	if err != nil {
		free = 1 << 62 // unknown: bound by size only
	}
	var out Pruned
	for _, e := range es {
		out.Left += e.bytes
	}
	for _, i := range victims(es, free, maxBytes, minFree) {
		e := es[i]
		if err := os.Remove(e.paths[0]); err != nil && !os.IsNotExist(err) {
			return out, fmt.Errorf("slice: prune the cache: %w", err)
		}
		for _, p := range e.paths[1:] {
			_ = os.Remove(p)
		}
		c.mu.Lock()
		delete(c.seen, e.paths[0])
		c.mu.Unlock()
		out.Removed = append(out.Removed, e.paths[0])
		out.Freed += e.bytes
		out.Left -= e.bytes
	}
	if len(out.Removed) > 0 {
		syncDir(c.Dir)
	}
	return out, nil
}

// cacheName reports whether name is a slice's file name (Name's form).
func cacheName(name string) bool {
	stem, ok := strings.CutSuffix(name, ".gguf")
	if !ok || len(stem) != 33 || stem[16] != '-' {
		return false
	}
	_, err1 := hex.DecodeString(stem[:16])
	_, err2 := hex.DecodeString(stem[17:])
	return err1 == nil && err2 == nil
}
