package calib

import (
	"math"

	"homering/halda"
)

// Ratio is one run's error for one device: its measured compute time per
// token (ms) over the time Halda predicted for its part with the
// uncalibrated profile (predictedMs: ComputeMs + DiskMs of its assignment).
// ok is false when either is not a positive finite number.
func Ratio(measuredMs, predictedMs float64) (float64, bool) {
	r := measuredMs / predictedMs
	if !(measuredMs > 0) || !(predictedMs > 0) || math.IsInf(r, 0) || math.IsNaN(r) {
		return 0, false
	}
	return r, true
}

// FromRatios returns a calibrator for each device of plan (solved with the
// uncalibrated profiles) that has ratios (rolling, from earlier runs under
// any plan): it holds one sample, the median ratio times the device's
// predicted ComputeMs + DiskMs in plan, what the device would measure under
// plan if it erred as it did before. Recalibrate(p, plan, FromRatios(plan,
// r), s) is then the calibrated problem and plan. The ratio keeps the error
// across plans that give a device other windows.
func FromRatios(plan halda.Plan, ratios map[string][]float64) map[string]*Calibrator {
	out := map[string]*Calibrator{}
	for _, a := range plan.Ring {
		rs := ratios[a.Device]
		if len(rs) == 0 {
			continue
		}
		c := &Calibrator{MinSamples: 1}
		c.Compute(median(rs) * (a.ComputeMs + a.DiskMs) / 1e3)
		if _, ok := c.ComputeMedian(); ok {
			out[a.Device] = c
		}
	}
	return out
}

// Uncalibrated is the time Halda's uncalibrated profile raw predicts for an
// assignment a made with the calibrated profile cal (ComputeMs + DiskMs, ms):
// Apply scales every rate of a term by one factor, so each term's time
// scales back by it. It is the denominator of the next Ratio.
func Uncalibrated(a halda.Assignment, raw, cal halda.Device) float64 {
	fc, fd := 1.0, 1.0
	if raw.CPUReadBytesPerSec > 0 && cal.CPUReadBytesPerSec > 0 {
		fc = cal.CPUReadBytesPerSec / raw.CPUReadBytesPerSec
	}
	if raw.DiskSeqBytesPerSec > 0 && cal.DiskSeqBytesPerSec > 0 {
		fd = cal.DiskSeqBytesPerSec / raw.DiskSeqBytesPerSec
	}
	return a.ComputeMs*fc + a.DiskMs*fd
}
