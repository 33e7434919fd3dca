package job

import (
	"errors"
	"log/slog"
	"os"

	"homering/engine/profile/modelprof"
	"homering/engine/ring/ggmlengine"
)

// routingStore keeps the routing a job's windows count of a MoE model in
// the device's config directory (engine/profile/modelprof's routing files):
// the next job's prefetch warms what it shows routed most, and the agent's
// planner gives it to Halda (issue 20 items 4 and 5).
type routingStore struct {
	dir    string   // modelprof.RoutingDir of the config directory
	model  [32]byte // the model's header hash, as the ring names it
	nLayer int
	log    *slog.Logger
}

// newRoutingStore is configDir's store for model; nil (no store) without
// a config directory.
func newRoutingStore(configDir string, model [32]byte, nLayer int, log *slog.Logger) ggmlengine.RoutingStore {
	if configDir == "" {
		return nil
	}
	return &routingStore{dir: modelprof.RoutingDir(configDir), model: model, nLayer: nLayer, log: log}
}

func (s *routingStore) Counts() [][]int64 {
	r, err := modelprof.LoadRouting(s.dir, s.model)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("measured routing ignored; prefetch assumes uniform routing", "err", err)
		}
		return nil
	}
	if len(r.Counts) != s.nLayer {
		return nil
	}
	return r.Counts
}

func (s *routingStore) Add(first int, counts [][]int64) {
	if err := modelprof.AddRouting(s.dir, s.model, s.nLayer, first, counts); err != nil {
		s.log.Warn("measured routing not kept", "err", err)
	}
}
