package ggml

/*
#include "engine.h"
*/
import "C"

import (
	"errors"
	"unsafe"
)

// ErrNoExperts: the window's model routes no experts.
var ErrNoExperts = errors.New("ggml: the model has no routed experts to count")

// CountExperts starts (on) or stops counting which experts the window's
// routers pick, per layer: a measured routing histogram for the model
// profile (engine/profile/modelprof.Routing) and for prefetch
// (Model.SetExpertFrequencies). Starting again keeps the counts; stopping
// drops them. While on, ggml computes each graph in runs up to every
// layer's selection, so leave it off where every microsecond counts.
func (w *Window) CountExperts(on bool) error {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if w.m.closed || w.c == nil {
		return ErrClosed
	}
	if w.m.info.NExpert == 0 {
		return ErrNoExperts
	}
	v := C.int(0)
	if on {
		v = 1
	}
	if C.hr_window_count_experts(w.c, v) != 0 {
		return errors.New("ggml: cannot count experts: out of memory")
	}
	return nil
}

// ExpertCounts returns the picks counted since CountExperts(true), per
// window layer (layer First+i at i) and expert; nil when not counting.
func (w *Window) ExpertCounts() [][]int64 {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if w.m.closed || w.c == nil {
		return nil
	}
	p := C.hr_window_expert_counts(w.c)
	if p == nil {
		return nil
	}
	n, ne := w.p.Last-w.p.First, w.m.info.NExpert
	flat := unsafe.Slice((*int64)(unsafe.Pointer(p)), n*ne)
	out := make([][]int64, n)
	for i := range out {
		out[i] = append([]int64(nil), flat[i*ne:(i+1)*ne]...)
	}
	return out
}
