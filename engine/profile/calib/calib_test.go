package calib

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"homering/halda"
	"homering/halda/lpsolve"
)

func base() halda.Device {
	return halda.Device{
		Name: "a", OS: halda.Linux,
		CPUFlops:           map[string]float64{"q4_k": 100e9, "f16": 50e9},
		CPUReadBytesPerSec: 10e9,
		KVCopyCPUSec:       2e-6,
		RAMAvailable:       8 << 30,
		DiskSeqBytesPerSec: 1e9, DiskRandBytesPerSec: 0.5e9, DiskFaultBytesPerSec: 0.8e9,
		LinkSec: map[string]float64{"b": 0.004},
	}
}

func TestApply(t *testing.T) {
	approx := cmpopts.EquateApprox(1e-12, 0)
	tests := []struct {
		name    string
		samples []float64 // seconds per token
		links   map[string][]float64
		pred    halda.Assignment
		want    func(d *halda.Device)
	}{{
		name:    "too few samples change nothing",
		samples: []float64{0.2, 0.2, 0.2, 0.2},
		pred:    halda.Assignment{W: 8, ComputeMs: 100},
		want:    func(*halda.Device) {},
	}, {
		name:    "twice as slow as predicted halves the CPU rates",
		samples: []float64{0.2, 0.21, 0.19, 0.2, 0.2},
		pred:    halda.Assignment{W: 8, ComputeMs: 100},
		want: func(d *halda.Device) {
			d.CPUFlops = map[string]float64{"q4_k": 50e9, "f16": 25e9}
			d.CPUReadBytesPerSec = 5e9
			d.KVCopyCPUSec = 4e-6
		},
	}, {
		name:    "the median ignores two stalls in five",
		samples: []float64{0.05, 3, 0.05, 2, 0.05},
		pred:    halda.Assignment{W: 8, ComputeMs: 100},
		want: func(d *halda.Device) {
			d.CPUFlops = map[string]float64{"q4_k": 200e9, "f16": 100e9}
			d.CPUReadBytesPerSec = 20e9
			d.KVCopyCPUSec = 1e-6
		},
	}, {
		name:    "predicted disk time is kept out of the compute factor",
		samples: []float64{0.3, 0.3, 0.3, 0.3, 0.3},
		pred:    halda.Assignment{W: 8, ComputeMs: 100, DiskMs: 50},
		want: func(d *halda.Device) {
			d.CPUFlops = map[string]float64{"q4_k": 40e9, "f16": 20e9}
			d.CPUReadBytesPerSec = 4e9
			d.KVCopyCPUSec = 5e-6
		},
	}, {
		name:    "a paging device's error goes to its disk",
		samples: []float64{1.1, 1.1, 1.1, 1.1, 1.1},
		pred:    halda.Assignment{W: 8, ComputeMs: 100, DiskMs: 500},
		want: func(d *halda.Device) {
			d.DiskSeqBytesPerSec = 0.5e9
			d.DiskRandBytesPerSec = 0.25e9
			d.DiskFaultBytesPerSec = 0.4e9
		},
	}, {
		name:    "the factor is bounded",
		samples: []float64{100, 100, 100, 100, 100},
		pred:    halda.Assignment{W: 8, ComputeMs: 100},
		want: func(d *halda.Device) {
			d.CPUFlops = map[string]float64{"q4_k": 20e9, "f16": 10e9}
			d.CPUReadBytesPerSec = 2e9
			d.KVCopyCPUSec = 10e-6
		},
	}, {
		name:  "links take the median of their samples",
		links: map[string][]float64{"b": {0.001, 0.003, 0.002}, "c": {0.01}},
		pred:  halda.Assignment{W: 8, ComputeMs: 100},
		want:  func(d *halda.Device) { d.LinkSec = map[string]float64{"b": 0.002, "c": 0.01} },
	}, {
		name:    "garbage samples are ignored",
		samples: []float64{math.NaN(), -1, 0, math.Inf(1)},
		pred:    halda.Assignment{W: 8, ComputeMs: 100},
		want:    func(*halda.Device) {},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Calibrator
			for _, s := range tt.samples {
				c.Compute(s)
			}
			for p, ss := range tt.links {
				for _, s := range ss {
					c.Link(p, s)
				}
			}
			want := base()
			tt.want(&want)
			b := base()
			got := c.Apply(b, tt.pred)
			if diff := cmp.Diff(want, got, approx); diff != "" {
				t.Errorf("Apply (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(base(), b); diff != "" {
				t.Errorf("Apply modified its input (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRollingWindow(t *testing.T) {
	c := Calibrator{ComputeWindow: 3, MinSamples: 3}
	for _, s := range []float64{9, 9, 9, 1, 1, 1} {
		c.Compute(s)
	}
	if m, ok := c.ComputeMedian(); !ok || m != 1 {
		t.Errorf("ComputeMedian = %v, %v; want 1, true (old samples rolled out)", m, ok)
	}
}

func TestSwitch(t *testing.T) {
	tests := []struct {
		name          string
		current, cand float64
		want          bool
	}{
		{"clearly better", 100, 90, true},
		{"within the margin", 100, 96, false},
		{"worse", 100, 120, false},
		{"no candidate", 100, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Switch(tt.current, tt.cand); got != tt.want {
				t.Errorf("Switch(%v, %v) = %v, want %v", tt.current, tt.cand, got, tt.want)
			}
		})
	}
}

// TestRecalibrateReproducesMeasurement: after calibrating a single device
// with its measured time, Halda's recomputed prediction equals the median.
func TestRecalibrateReproducesMeasurement(t *testing.T) {
	p, plan := singleDevice(t)
	measured := plan.PredictedMs * 1.37 / 1e3
	var c Calibrator
	for range 5 {
		c.Compute(measured)
	}
	_, np, err := Recalibrate(p, plan, map[string]*Calibrator{"me": &c}, lpsolve.Solver{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := np.PredictedMs, measured*1e3; math.Abs(got-want) > 1e-6*want {
		t.Errorf("recalibrated prediction %.6f ms, want the measured %.6f ms (before: %.6f)", got, want, plan.PredictedMs)
	}
}
