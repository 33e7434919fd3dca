package agent

import (
	"sort"
	"sync"
	"time"

	"homering/app/api/apitype"
)

// Work is the list of long work the UI draws as progress bars: the ring's
// weight transfers (Begin, then Progress as bytes arrive, then End), the
// background measurement's steps, and model loads (seen by MeasuredChat,
// measured.go, since the runner protocol says nothing until the model is
// loaded). Safe for concurrent use; the live stream sends a snapshot soon
// after every change.
type Work struct {
	mu      sync.Mutex // guards tasks and changed
	tasks   map[string]*task
	changed chan struct{} // closed and replaced on every change
}

type task struct {
	apitype.Task
	began time.Time
}

// NewWork returns an empty list.
func NewWork() *Work {
	return &Work{tasks: map[string]*task{}, changed: make(chan struct{})}
}

// Begin starts (or restarts) the task id.
func (w *Work) Begin(now time.Time, id, kind, title, detail string, expected time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tasks[id] = &task{Task: apitype.Task{ID: id, Kind: kind, Title: title, Detail: detail, ExpectedMs: expected.Milliseconds()}, began: now}
	w.notify()
}

// Progress sets how far the task id is (bytes or steps; total 0: unknown).
// A task not begun is begun with id as its title.
func (w *Work) Progress(now time.Time, id string, done, total int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.tasks[id]
	if !ok {
		t = &task{Task: apitype.Task{ID: id, Kind: id, Title: id}, began: now}
		w.tasks[id] = t
	}
	t.Done, t.Total = done, total
	w.notify()
}

// Steps sets how far the task id is in steps (Unit "steps") and retitles
// it: the title says "n/m" and the detail the step running now. A task not
// begun is begun.
func (w *Work) Steps(now time.Time, id, kind, title, detail string, done, total int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.tasks[id]
	if !ok {
		t = &task{began: now}
		w.tasks[id] = t
	}
	t.ID, t.Kind, t.Title, t.Detail, t.Done, t.Total, t.Unit = id, kind, title, detail, done, total, "steps"
	w.notify()
}

// End removes the task id (no-op when it is not running).
func (w *Work) End(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.tasks[id]; ok {
		delete(w.tasks, id)
		w.notify()
	}
}

func (w *Work) notify() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// Changed returns a channel closed at the next change.
func (w *Work) Changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}

// List returns the running tasks, oldest first, with their elapsed time at
// now. Never nil, so the UI gets [] rather than null.
func (w *Work) List(now time.Time) []apitype.Task {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]apitype.Task, 0, len(w.tasks))
	began := map[string]time.Time{}
	for id, t := range w.tasks {
		v := t.Task
		v.ElapsedMs = max(now.Sub(t.began).Milliseconds(), 0)
		out = append(out, v)
		began[id] = t.began
	}
	sort.Slice(out, func(i, j int) bool {
		bi, bj := began[out[i].ID], began[out[j].ID]
		if !bi.Equal(bj) {
			return bi.Before(bj)
		}
		return out[i].ID < out[j].ID
	})
	return out
}
