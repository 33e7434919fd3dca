package calib

import (
	"math"
	"testing"

	"homering/halda"
	"homering/halda/lpsolve"
)

func TestRatio(t *testing.T) {
	tests := []struct {
		name                string
		measured, predicted float64
		want                float64
		ok                  bool
	}{
		{name: "slower than predicted", measured: 30, predicted: 20, want: 1.5, ok: true},
		{name: "faster than predicted", measured: 10, predicted: 20, want: 0.5, ok: true},
		{name: "nothing measured", measured: 0, predicted: 20},
		{name: "nothing predicted", measured: 10, predicted: 0},
		{name: "NaN", measured: math.NaN(), predicted: 20},
		{name: "infinite", measured: math.Inf(1), predicted: 20},
		{name: "negative", measured: -5, predicted: 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Ratio(tt.measured, tt.predicted)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Ratio(%v, %v) = %v, %v; want %v, %v", tt.measured, tt.predicted, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func singleDevice(t *testing.T) (halda.Problem, halda.Plan) {
	t.Helper()
	d := base()
	d.Name = "me"
	d.LinkSec = nil
	p := halda.Problem{
		Devices: []halda.Device{d},
		Model: halda.Model{
			Layers: 8, LayerBytes: map[string]int64{"q4_k": 100 << 20}, LayerFlops: map[string]float64{"q4_k": 2e8},
			InputBytes: 10 << 20, OutputBytes: 10 << 20, OutputFlops: map[string]float64{"q4_k": 2e7},
			Vocab: 1000, Embedding: 1024, KVBytesPerToken: 1024, ContextTokens: 256,
		},
	}
	plan, err := halda.Solve(p, lpsolve.Solver{})
	if err != nil {
		t.Fatal(err)
	}
	return p, plan
}

// TestFromRatios: the median of earlier runs' ratios moves the prediction to
// that multiple of the uncalibrated one, and Uncalibrated recovers the
// uncalibrated time from the calibrated plan (the next run's denominator).
func TestFromRatios(t *testing.T) {
	tests := []struct {
		name   string
		ratios []float64
		want   float64 // calibrated prediction over the uncalibrated one
		tol    float64 // relative; 0: 1e-6
	}{
		{name: "no runs yet", want: 1},
		{name: "one run, 37% slower", ratios: []float64{1.37}, want: 1.37},
		{name: "the median of three", ratios: []float64{0.8, 3, 0.9}, want: 0.9},
		// The bound scales the compute term alone: a little disk time
		// keeps the whole just under it.
		{name: "bounded by MaxFactor", ratios: []float64{40}, want: DefaultMaxFactor, tol: 1e-3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, plan := singleDevice(t)
			raw := plan.Ring[0]
			cals := FromRatios(plan, map[string][]float64{"me": tt.ratios, "gone": {2}})
			if _, ok := cals["gone"]; ok {
				t.Error("a device outside the plan got a calibrator")
			}
			q, np, err := Recalibrate(p, plan, cals, lpsolve.Solver{})
			if err != nil {
				t.Fatal(err)
			}
			tol := tt.tol
			if tol == 0 {
				tol = 1e-6
			}
			if got := np.PredictedMs / plan.PredictedMs; math.Abs(got-tt.want) > tol*tt.want {
				t.Errorf("calibrated/uncalibrated prediction = %.6f, want %.6f", got, tt.want)
			}
			back := Uncalibrated(np.Ring[0], p.Devices[0], q.Devices[0])
			if want := raw.ComputeMs + raw.DiskMs; math.Abs(back-want) > 1e-6*want {
				t.Errorf("Uncalibrated = %.6f ms, want the uncalibrated plan's %.6f ms", back, want)
			}
		})
	}
}
