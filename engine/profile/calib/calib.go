package calib

import (
	"maps"
	"slices"

	"homering/halda"
)

// Defaults (the thesis's ring sizes, §1.5).
const (
	DefaultComputeWindow = 15
	DefaultLinkWindow    = 7
	DefaultMinSamples    = 5 // a median of 5 survives two stalled tokens
	DefaultMaxFactor     = 5.0
	// SwitchMargin is τ: a new plan replaces the current one only when its
	// prediction is below τ × the current plan's.
	SwitchMargin = 0.95
)

// Calibrator keeps the rolling samples of one device. The zero value is
// ready with the defaults.
type Calibrator struct {
	ComputeWindow, LinkWindow, MinSamples int
	MaxFactor                             float64

	compute []float64
	links   map[string][]float64
}

func orDefault(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}

// push appends v to a ring of at most n samples.
func push(s []float64, v float64, n int) []float64 {
	s = append(s, v)
	if len(s) > n {
		s = slices.Delete(s, 0, len(s)-n)
	}
	return s
}

// Compute records one token's measured compute time on this device.
// Non-positive and non-finite samples are ignored.
func (c *Calibrator) Compute(sec float64) {
	if !(sec > 0) || sec > 1e9 {
		return
	}
	c.compute = push(c.compute, sec, orDefault(c.ComputeWindow, DefaultComputeWindow))
}

// Link records one measured time to send a hidden state to peer.
func (c *Calibrator) Link(peer string, sec float64) {
	if !(sec >= 0) || sec > 1e9 {
		return
	}
	if c.links == nil {
		c.links = map[string][]float64{}
	}
	c.links[peer] = push(c.links[peer], sec, orDefault(c.LinkWindow, DefaultLinkWindow))
}

// ComputeMedian is the rolling median of the compute samples, and whether
// there are enough of them to use.
func (c *Calibrator) ComputeMedian() (float64, bool) {
	if len(c.compute) < orDefault(c.MinSamples, DefaultMinSamples) {
		return 0, false
	}
	return median(c.compute), true
}

func median(s []float64) float64 {
	t := slices.Clone(s)
	slices.Sort(t)
	n := len(t)
	if n%2 == 1 {
		return t[n/2]
	}
	return (t[n/2-1] + t[n/2]) / 2
}

// Apply returns base calibrated against predicted, this device's part of the
// plan the samples were measured under (see the package doc). base is not
// modified.
func (c *Calibrator) Apply(base halda.Device, predicted halda.Assignment) halda.Device {
	d := base
	d.CPUFlops = maps.Clone(base.CPUFlops)
	d.GPUFlops = maps.Clone(base.GPUFlops)
	d.LinkSec = maps.Clone(base.LinkSec)
	for peer, s := range c.links {
		if len(s) == 0 {
			continue
		}
		if d.LinkSec == nil {
			d.LinkSec = map[string]float64{}
		}
		d.LinkSec[peer] = median(s)
	}
	m, ok := c.ComputeMedian()
	comp, disk := predicted.ComputeMs/1e3, predicted.DiskMs/1e3
	if !ok || comp+disk <= 0 {
		return d
	}
	maxF := c.MaxFactor
	if maxF <= 1 {
		maxF = DefaultMaxFactor
	}
	bound := func(f float64) float64 { return min(max(f, 1/maxF), maxF) }
	if comp >= disk {
		// Faster than predicted → f > 1 → higher rates.
		f := maxF
		if rest := m - disk; rest > 0 {
			f = bound(comp / rest)
		}
		cpu := predicted.W > predicted.N || predicted.W == 0
		gpu := predicted.N > 0
		if cpu {
			scale(d.CPUFlops, f)
			d.CPUReadBytesPerSec *= f
			d.KVCopyCPUSec /= f
		}
		if gpu {
			scale(d.GPUFlops, f)
			d.GPUReadBytesPerSec *= f
			d.KVCopyGPUSec /= f
		}
		return d
	}
	f := maxF
	if rest := m - comp; rest > 0 {
		f = bound(disk / rest)
	}
	d.DiskSeqBytesPerSec *= f
	d.DiskRandBytesPerSec *= f
	d.DiskFaultBytesPerSec *= f
	return d
}

func scale(m map[string]float64, f float64) {
	for k, v := range m {
		m[k] = v * f
	}
}

// Switch reports whether a candidate plan should replace the current one:
// its predicted time must be below SwitchMargin × the current plan's
// prediction recomputed with the same calibrated profiles.
func Switch(currentMs, candidateMs float64) bool {
	return candidateMs > 0 && candidateMs < SwitchMargin*currentMs
}

// Recalibrate returns p with each named device replaced by its calibrated
// version (devices without a calibrator are unchanged), and the plan
// halda.Solve finds for it: its PredictedMs is the prediction recomputed
// with the calibrated coefficients.
func Recalibrate(p halda.Problem, plan halda.Plan, cals map[string]*Calibrator, s halda.Solver) (halda.Problem, halda.Plan, error) {
	q := p
	q.Devices = slices.Clone(p.Devices)
	for i, d := range q.Devices {
		c := cals[d.Name]
		if c == nil {
			continue
		}
		var a halda.Assignment
		for _, r := range plan.Ring {
			if r.Device == d.Name {
				a = r
			}
		}
		q.Devices[i] = c.Apply(d, a)
	}
	np, err := halda.Solve(q, s)
	return q, np, err
}
