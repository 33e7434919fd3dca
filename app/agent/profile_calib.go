package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/app/planner"
	"homering/engine/profile"
	"homering/engine/profile/calib"
	"homering/engine/profile/envelope"
	"homering/engine/runner"
)

// Calibration in the agent (engine/profile/calib): after each run the
// measured compute time per token of every device (runner.Stats of a
// single-device chat, DeviceStats of a ring) over Halda's uncalibrated
// prediction for its part is one ratio; the last calib.DefaultComputeWindow
// ratios per device, model and thread count are kept next to the profile
// cache (profiles/calibration/, one file each, checksummed as the profiles
// are: engine/profile/envelope; a corrupt one is ignored and started
// afresh). The next plan is solved with each device's rates scaled by its
// median ratio (calib.FromRatios, calib.Recalibrate).
// Link times: the hidden-state round trip of each look at a peer goes
// into a rolling median per peer, which plans use (app/planner).

// calibDirName is the directory under the profile cache holding the ratios.
const calibDirName = "calibration"

// minCalibTokens is the fewest decoded tokens a single-device run needs to
// count: its mean per token is then a steady measurement.
const minCalibTokens = 4

// calibStore keeps the ratios on disk. Safe for concurrent use.
type calibStore struct {
	dir string // profiles/calibration under the config directory
	log *slog.Logger
	mu  sync.Mutex
}

func newCalibStore(configDir string, log *slog.Logger) *calibStore {
	return &calibStore{dir: filepath.Join(configDir, profile.CacheDirName, calibDirName), log: log}
}

// calibKey names a device's ratios: its ID, the model (name and size: a
// re-quantised file is another model) and the thread count (0 for a peer:
// its engine runs with its own setting, the same from run to run).
func calibKey(device, model string, threads int) string {
	size := int64(0)
	if fi, err := os.Stat(model); err == nil {
		size = fi.Size()
	}
	return fmt.Sprintf("%s|%s|%d|t%d", device, filepath.Base(model), size, threads)
}

type calibEntry struct {
	Key    string    `json:"key"`
	Ratios []float64 `json:"ratios"`
}

// calibField names the entry in a calibration file
// (engine/profile/envelope): files written by earlier versions hold it there.
const calibField = "entry"

func (s *calibStore) path(key string) string {
	h := sha256.Sum256([]byte(key))
	return filepath.Join(s.dir, hex.EncodeToString(h[:8])+".json")
}

// ratios returns key's ratios, oldest first; nil when there are none or the
// file cannot be trusted (logged).
func (s *calibStore) ratios(key string) []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.load(key)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log.Warn("calibration: entry ignored; starting afresh", "key", key, "err", err)
	}
	return r
}

func (s *calibStore) load(key string) ([]float64, error) {
	b, err := os.ReadFile(s.path(key))
	if err != nil {
		return nil, err
	}
	payload, err := envelope.Open(b, calibField)
	if err != nil {
		return nil, err
	}
	var e calibEntry
	if err := json.Unmarshal(payload, &e); err != nil {
		return nil, err
	}
	if e.Key != key {
		return nil, fmt.Errorf("holds key %q", e.Key)
	}
	for _, r := range e.Ratios {
		if !(r > 0) || math.IsInf(r, 0) {
			return nil, fmt.Errorf("holds ratio %v", r)
		}
	}
	return e.Ratios, nil
}

// add appends one ratio to key's rolling window and stores it.
func (s *calibStore) add(key string, r float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs, _ := s.load(key) // an untrusted entry starts afresh
	rs = append(rs, r)
	if n := calib.DefaultComputeWindow; len(rs) > n {
		rs = rs[len(rs)-n:]
	}
	b, err := envelope.Seal(calibField, calibEntry{Key: key, Ratios: rs})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	return config.WriteFile(s.path(key), b)
}

// calibration returns the store of this backend's config directory.
func (b *Agent) calibration() *calibStore {
	b.ring.calibOnce.Do(func() { b.ring.ratios = newCalibStore(b.dir, b.log) })
	return b.ring.ratios
}

// threadsOf is the thread count a device's ratios are kept for (self:
// this device's ID).
func (b *Agent) threadsOf(device, self string) int {
	if device == self {
		return b.threads
	}
	return 0
}

// learn records one device's measured compute ms per token against the
// uncalibrated prediction for its part.
func (b *Agent) learn(device, model string, measuredMs, uncalibratedMs float64) {
	r, ok := calib.Ratio(measuredMs, uncalibratedMs)
	if !ok {
		return
	}
	if err := b.calibration().add(calibKey(device, model, b.threadsOf(device, b.selfID())), r); err != nil {
		b.log.Warn("calibration: could not store", "err", err)
	}
}

// learnAlone calibrates this device from a single-device chat: the
// planner's prediction for this device alone (uncalibrated and calibrated
// with the runs before) beside what it measured, kept for status and the
// map.
func (b *Agent) learnAlone(path string, nCtx int, st runner.Stats) {
	// A speculated reply's time per token is not one pass's, which is
	// what the planner predicts.
	if st.DecodeTokens < minCalibTokens || !(st.DecodeMS > 0) || st.Drafted > 0 {
		return
	}
	pl, err := b.plans().Next(planner.Request{Model: path, ContextTokens: nCtx, Alone: true})
	if err != nil || len(pl.Raw.Ring) == 0 || len(pl.Plan.Ring) == 0 {
		return
	}
	self := b.selfID()
	measured := st.DecodeMS / float64(st.DecodeTokens)
	runs := len(b.calibration().ratios(calibKey(self, path, b.threadsOf(self, self))))
	b.learn(self, path, measured, pl.Raw.Ring[0].ComputeMs+pl.Raw.Ring[0].DiskMs)
	b.ring.mu.Lock()
	b.ring.alone = &apitype.SelfRun{Model: filepath.Base(path), MeasuredMs: measured, PredictedMs: pl.Plan.PredictedMs,
		UncalibratedMs: pl.Raw.PredictedMs, CalibratedRuns: runs, At: time.Now()}
	b.ring.mu.Unlock()
}

// selfID names this device in plans and calibration: its device ID's text
// (halda's names), or selfName ("self") without a node.
func (b *Agent) selfID() string {
	switch {
	case b.node != nil:
		return planner.Name(b.node.Status().Device.ID)
	case b.selfName != "":
		return b.selfName
	}
	return "self"
}

// calibrationRatios are the ratios kept for each device and model, which
// the planner calibrates every plan with (the device map's and the chat's).
func (b *Agent) calibrationRatios(model string, deviceIDs []string) map[string][]float64 {
	self := b.selfID()
	out := map[string][]float64{}
	for _, id := range deviceIDs {
		if rs := b.calibration().ratios(calibKey(id, model, b.threadsOf(id, self))); len(rs) > 0 {
			out[id] = rs
		}
	}
	return out
}
