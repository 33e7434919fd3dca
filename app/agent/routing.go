package agent

import (
	"errors"
	"fmt"
	"os"

	"homering/engine/profile/modelprof"
)

// Measured routing (issue 20 items 4 and 5): the engine child's ring jobs
// count a MoE model's router picks and keep them in this config
// directory (engine/profile/modelprof's routing files, written by
// engine/ring/job; a worker keeps those of its windows' layers, the head
// those of its own), and the next job's prefetch warms what they show
// routed most. The planner reads the same file here, so that Halda's hot
// set and cold rate are the measured ones: layers this device never ran
// count as uniform (Routing.Filled).

// measuredRouting is the routing kept for the model file at path, every
// layer filled; nil when none is kept (or the file is unreadable).
func (b *Agent) measuredRouting(path string) *modelprof.Routing {
	id, err := b.modelID(path)
	if err != nil {
		return nil
	}
	r, err := modelprof.LoadRouting(modelprof.RoutingDir(b.dir), id)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			b.log.Warn("measured routing ignored; planning with uniform routing", "model", path, "err", err)
		}
		return nil
	}
	return r.Filled()
}

// modelID is the header hash of the model file at path, read once per
// file version.
func (b *Agent) modelID(path string) ([32]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return [32]byte{}, err
	}
	key := fmt.Sprint(path, "|", fi.Size(), "|", fi.ModTime().UnixNano())
	b.ring.mu.Lock()
	id, ok := b.ring.modelIDs[key]
	b.ring.mu.Unlock()
	if ok {
		return id, nil
	}
	if id, err = modelprof.ModelID(path); err != nil {
		return [32]byte{}, err
	}
	b.ring.mu.Lock()
	if b.ring.modelIDs == nil || len(b.ring.modelIDs) > 64 {
		b.ring.modelIDs = map[string][32]byte{}
	}
	b.ring.modelIDs[key] = id
	b.ring.mu.Unlock()
	return id, nil
}
