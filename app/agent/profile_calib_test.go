package agent

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/app/planner"
	"homering/discovery/deviceid"
	"homering/engine/profile/calib"
	"homering/engine/runner"
	"homering/halda"
	"homering/internal/testlog"
)

func TestCalibStore(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(path string) error // applied to the stored file; nil: none
		want    []float64
	}{
		{name: "kept as stored", want: []float64{1.5, 0.8}},
		{name: "garbage is ignored", corrupt: func(p string) error { return os.WriteFile(p, []byte("{not json"), 0o644) }},
		{name: "a changed ratio fails the checksum", corrupt: func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(p, []byte(strings.Replace(string(b), "1.5", "2.5", 1)), 0o644)
		}},
		{name: "an unreadable entry is ignored", corrupt: func(p string) error { return errors.Join(os.Remove(p), os.Mkdir(p, 0o755)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newCalibStore(t.TempDir(), slog.New(slog.NewTextHandler(testlog.Writer(t), nil)))
			key := calibKey("dev", "m.gguf", 1)
			for _, r := range []float64{1.5, 0.8} {
				if err := s.add(key, r); err != nil {
					t.Fatal(err)
				}
			}
			if tt.corrupt != nil {
				if err := tt.corrupt(s.path(key)); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tt.want, s.ratios(key)); diff != "" {
				t.Errorf("ratios (-want +got):\n%s", diff)
			}
			if got := s.ratios(calibKey("dev", "m.gguf", 2)); got != nil {
				t.Errorf("another thread count's ratios = %v, want none", got)
			}
		})
	}
	t.Run("a corrupt entry starts afresh", func(t *testing.T) {
		s := newCalibStore(t.TempDir(), slog.New(slog.DiscardHandler))
		key := calibKey("dev", "m.gguf", 1)
		if err := errors.Join(s.add(key, 3), os.WriteFile(s.path(key), []byte("garbage"), 0o644)); err != nil {
			t.Fatal(err)
		}
		if err := s.add(key, 1.25); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]float64{1.25}, s.ratios(key)); diff != "" {
			t.Errorf("ratios (-want +got):\n%s", diff)
		}
	})
	t.Run("a rolling window", func(t *testing.T) {
		s := newCalibStore(t.TempDir(), slog.New(slog.DiscardHandler))
		key := calibKey("dev", "m.gguf", 1)
		for i := range calib.DefaultComputeWindow + 3 {
			if err := s.add(key, float64(i+1)); err != nil {
				t.Fatal(err)
			}
		}
		got := s.ratios(key)
		if len(got) != calib.DefaultComputeWindow || got[0] != 4 {
			t.Errorf("ratios = %v, want the last %d (from 4)", got, calib.DefaultComputeWindow)
		}
	})
}

// TestAgentCalibratesAloneRuns: after a chat on this device alone, the
// next chat's prediction is calibrated by the first one's measurement: it
// lies nearer to it than the uncalibrated prediction does; the ratios
// outlive the agent (a new backend on the same directory reads them).
func TestAgentCalibratesAloneRuns(t *testing.T) {
	home := t.TempDir()
	t.Setenv(config.EnvHome, home)
	log := slog.New(slog.NewTextHandler(testlog.Writer(t), nil))
	model, err := filepath.Abs(profileModel)
	if err != nil {
		t.Fatal(err)
	}
	newBackend := func() *Agent {
		b := &Agent{sup: runner.New(runner.Options{Command: func() *exec.Cmd { return testChild("runner") }, Log: log}),
			dir: home, override: model, threads: 1, log: log, running: map[*chatRun]struct{}{}}
		t.Cleanup(func() { b.Close() })
		return b
	}
	b := newBackend()
	chat := func() *apitype.SelfRun {
		t.Helper()
		st, err := b.Chat(context.Background(), apitype.ChatRequest{Prompt: "Once upon a time", MaxTokens: 24}, func(string) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		s := b.RingStatus().Self
		if s == nil {
			t.Fatalf("no single-device run recorded after a chat of %d tokens", st.CompletionTokens)
		}
		return s
	}
	first := chat()
	if first.CalibratedRuns != 0 || first.PredictedMs != first.UncalibratedMs || !(first.MeasuredMs > 0) {
		t.Fatalf("first run = %+v; want an uncalibrated prediction and a measurement", first)
	}
	second := chat()
	if second.CalibratedRuns != 1 {
		t.Errorf("second run calibrated by %d runs, want 1", second.CalibratedRuns)
	}
	t.Logf("first run: measured %.3f ms/token, predicted %.3f; second: measured %.3f, predicted %.3f calibrated, %.3f uncalibrated",
		first.MeasuredMs, first.PredictedMs, second.MeasuredMs, second.PredictedMs, second.UncalibratedMs)
	before := math.Abs(second.UncalibratedMs - first.MeasuredMs)
	after := math.Abs(second.PredictedMs - first.MeasuredMs)
	if !(after < before) {
		t.Errorf("second prediction %.3f ms (uncalibrated %.3f) is no nearer the first measurement %.3f ms", second.PredictedMs, second.UncalibratedMs, first.MeasuredMs)
	}
	again := newBackend()
	if got := len(again.calibration().ratios(calibKey("self", model, 1))); got != 2 {
		t.Errorf("a new agent reads %d ratios, want 2", got)
	}
}

// TestRingRunLearns: a ring run stores each device's measured compute over
// its uncalibrated share (a calibrated device's share scaled back) and
// reports the uncalibrated prediction beside the calibrated one.
func TestRingRunLearns(t *testing.T) {
	// Plans name devices by their ID's text; the runner's stats by the ID.
	selfID, peerID := deviceid.ForName("self"), deviceid.ForName("peer")
	selfN, peerN := selfID.String(), peerID.String() // halda's names, as app/planner gives them
	b := &Agent{dir: t.TempDir(), threads: 1, log: slog.New(slog.DiscardHandler), selfName: selfN}
	raw := halda.Device{Name: peerN, CPUReadBytesPerSec: 1e9, DiskSeqBytesPerSec: 1e9}
	cal := raw
	cal.CPUReadBytesPerSec = 2e9 // calibrated twice as fast as profiled
	job := &ringJob{pl: planner.Plan{
		Problem: halda.Problem{Devices: []halda.Device{{Name: selfN}, cal}},
		Plan: halda.Plan{Ring: []halda.Assignment{
			{Device: selfN, ID: selfID, ComputeMs: 10, PredictedMs: 12},
			{Device: peerN, ID: peerID, ComputeMs: 20, DiskMs: 5, PredictedMs: 27},
		}},
		RawDevices: map[string]halda.Device{selfN: {Name: selfN}, peerN: raw},
		ModelPath:  "m.gguf", Raw: halda.Plan{PredictedMs: 50},
	}, self: apitype.Device{Name: "this one"}}
	run := b.ringRun(job, runner.Stats{Devices: []runner.DeviceStats{{ID: selfID, ComputeMS: 15}, {ID: peerID, ComputeMS: 90}}})
	if run.UncalibratedMs != 50 {
		t.Errorf("run uncalibrated %v ms, want the uncalibrated plan's 50", run.UncalibratedMs)
	}
	got := map[deviceid.ID]float64{}
	for _, d := range run.Devices {
		got[d.ID] = d.UncalibratedMs
	}
	// peer: compute 20 ms calibrated is 40 ms as profiled, + 5 disk + 2 network.
	if diff := cmp.Diff(map[deviceid.ID]float64{selfID: 12, peerID: 47}, got); diff != "" {
		t.Errorf("uncalibrated shares (-want +got):\n%s", diff)
	}
	st := b.calibration()
	if diff := cmp.Diff([]float64{1.5}, st.ratios(calibKey(selfN, "m.gguf", 1))); diff != "" {
		t.Errorf("this device's ratios (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{2}, st.ratios(calibKey(peerN, "m.gguf", 0))); diff != "" {
		t.Errorf("the peer's ratios (-want +got):\n%s", diff)
	}
}
