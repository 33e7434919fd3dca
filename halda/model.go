package halda

import (
	"fmt"
	"math"
	"sort"

	"homering/discovery/deviceid"
)

// memKind is the memory model a device follows (package doc, "Memory models").
type memKind int

const (
	kindLinux      memKind = iota // Linux, Android: gradual reclaim, sequential reads (M3)
	kindMacNoMetal                // macOS on the CPU: gradual reclaim, random reads (M1)
	kindMetal                     // macOS with Metal: all-or-nothing reload (M2)
	kindWindows                   // Windows: gradual reclaim, random reads (M5)
)

// dev is a Device with everything Halda derives from it and the model.
type dev struct {
	Device
	kind memKind
	gpu  GPU

	// Seconds per layer per token.
	cpuSec, gpuSec float64 // Σ_q f^q/s^{cpu,q}, Σ_q f^q/s^{gpu,q}
	alpha, beta    float64 // eq. (A.3): CPU cost per layer, GPU minus CPU
	copies         float64 // (t^{ram-vram} + t^{vram-ram})(1 - 𝕀_UMA), per window
	outSec         float64 // head only: output layer compute + device loading

	dAvail  int64   // d^avail capped by the budget
	swap    int64   // Android: min(bytes_can_swap, swap_avail)
	dMetal  int64   // Metal working set capped by RAM and the budget
	dCUDA   int64   // free VRAM
	disk    float64 // s^disk for this OS (bytes/s)
	slowDsk bool    // disk below the threshold: never page (M4 only)

	// MoE (package doc, "Mixture of experts"): hotB is the hot set of a
	// CPU layer (h'; b' for a dense model), traffB one token's expert
	// reads of it (φ·x_e), readB what it re-reads per token when it
	// thrashes (a + φ·x_e; b dense); inact is the inactive share of the
	// page cache the traffic passes through.
	hotB, traffB, inact int64
	readB               float64
}

// prob is a validated Problem with derived quantities.
type prob struct {
	Problem
	devs    []dev
	L       int
	b       int64   // weight bytes per layer
	bp      int64   // b' = b + KV of one layer for n_kv tokens, every stream's
	r, rp   int64   // bytes a token reads of one layer (b for a dense model), r' = r + one stream's KV
	h, hp   int64   // hot bytes of one layer (b for a dense model), h' = h + KV, every stream's (≥ 1)
	rho     float64 // re-read rate of the paged overflow (1 for a dense model)
	kvL     int64   // KV bytes of one layer for n_kv tokens, every stream's (memory rows)
	kv1     int64   // of those, one stream's: what a token reads (compute rows)
	streams int     // the conversations the memory rows hold (Problem.Streams, ≥ 1)
	bio     int64   // b_i/V + b_o: the head's input row and output layer
	rowSec  float64 // head: reading the embedding row per token, set per head disk
	link    [][]float64
	maxIt   int
}

func invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Issue: fmt.Sprintf(format, args...)}
}

// Limits on a Problem. They are far beyond real clusters and models and keep
// Halda's integer arithmetic exact and its work bounded.
const (
	MaxLayers  = 4096
	MaxDevices = 256
	maxBytes   = 1 << 50
)

// prepare validates p and derives the per-device constants of A.3.
func prepare(p Problem) (*prob, error) {
	m := p.Model
	if len(p.Devices) == 0 {
		return nil, invalid("devices", "the list is empty; give at least the head device")
	}
	if m.Layers < 1 || m.Layers > MaxLayers {
		return nil, invalid("model.layers", "is %d; Halda plans models of 1 to %d layers", m.Layers, MaxLayers)
	}
	if len(p.Devices) > MaxDevices {
		return nil, invalid("devices", "lists %d devices; Halda plans rings of at most %d", len(p.Devices), MaxDevices)
	}
	if m.Vocab < 1 {
		return nil, invalid("model.vocab", "is %d; the vocabulary size must be positive", m.Vocab)
	}
	if m.ContextTokens < 0 || m.KVBytesPerToken < 0 || m.CPUBufferBytes < 0 || m.GPUBufferBytes < 0 ||
		m.InputBytes < 0 || m.OutputBytes < 0 {
		return nil, invalid("model", "has a negative size; sizes are bytes and token counts ≥ 0")
	}
	// Bounds that keep every byte count Halda forms (layers × bytes per
	// layer, sums over devices) far inside int64.
	if m.ContextTokens > 1<<24 || m.KVBytesPerToken > 1<<24 || m.CPUBufferBytes > maxBytes || m.GPUBufferBytes > maxBytes ||
		m.InputBytes > maxBytes || m.OutputBytes > maxBytes {
		return nil, invalid("model", "has a size beyond any real model (over 2^24 tokens or bytes per token, or a part over 1 PiB)")
	}
	if p.Streams < 0 || p.Streams > MaxStreams {
		return nil, invalid("streams", "is %d; a ring runs 0 (one) to %d conversations at once", p.Streams, MaxStreams)
	}
	if p.Rounds < 0 || (p.Rounds > 0 && m.Layers%p.Rounds != 0) {
		return nil, invalid("rounds", "is %d; a fixed number of rounds must divide the model's %d layers", p.Rounds, m.Layers)
	}
	if len(m.LayerBytes) == 0 || len(m.LayerFlops) == 0 {
		return nil, invalid("model.layer_bytes", "layer_bytes and layer_flops must list at least one weight type")
	}
	q := &prob{Problem: p, L: m.Layers}
	for t, v := range m.LayerBytes {
		if v < 0 || v > maxBytes {
			return nil, invalid("model.layer_bytes."+t, "is %d; a layer's bytes are between 0 and 1 PiB", v)
		}
		q.b += v
	}
	if q.b > maxBytes {
		return nil, invalid("model.layer_bytes", "sums to more than 1 PiB per layer")
	}
	if q.b <= 0 {
		return nil, invalid("model.layer_bytes", "sums to 0; a layer has weights")
	}
	for t, v := range m.LayerFlops {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, invalid("model.layer_flops."+t, "is %v; FLOPs are finite and ≥ 0", v)
		}
	}
	// Each conversation in flight keeps its own KV on every device, which
	// the memory rows hold; a token reads only its own (package doc,
	// "Streams").
	q.streams = max(p.Streams, 1)
	q.kv1 = m.KVBytesPerToken * int64(m.ContextTokens)
	q.kvL = q.kv1 * int64(q.streams)
	q.bp = q.b + q.kvL
	q.r, q.h, q.rho = q.b, q.b, 1
	if m.LayerReadBytes != 0 || m.LayerHotBytes != 0 || m.ColdReadRate != 0 || m.LayerExpertBytes != 0 {
		if err := q.moe(); err != nil {
			return nil, err
		}
	}
	q.rp, q.hp = q.r+q.kv1, max(q.h+q.kvL, 1)
	q.bio = m.InputBytes/int64(m.Vocab) + m.OutputBytes
	if q.DiskThreshold == 0 {
		q.DiskThreshold = DefaultDiskThreshold
	}
	q.maxIt = p.MaxIterations
	if q.maxIt <= 0 {
		q.maxIt = 2*len(p.Devices) + 4
	}

	names := map[string]int{}
	ids := map[deviceid.ID]bool{}
	for i, d := range p.Devices {
		f := fmt.Sprintf("devices[%d]", i)
		if d.Name == "" {
			return nil, invalid(f+".name", "is empty; every device needs a unique name")
		}
		if _, dup := names[d.Name]; dup {
			return nil, invalid(f+".name", "%q appears twice; device names must be unique", d.Name)
		}
		names[d.Name] = i
		if !d.ID.IsZero() {
			if _, dup := ids[d.ID]; dup {
				return nil, invalid(f+".id", "%s appears twice; device IDs must be unique", d.ID)
			}
			ids[d.ID] = true
		}
		f = fmt.Sprintf("devices[%q]", d.Name)
		x, err := q.derive(d, f, i == 0)
		if err != nil {
			return nil, err
		}
		q.devs = append(q.devs, x)
	}
	// Link times, directed: link[i][j] is i sending to j.
	n := len(p.Devices)
	q.link = make([][]float64, n)
	for i, d := range p.Devices {
		q.link[i] = make([]float64, n)
		for j, e := range p.Devices {
			if i == j {
				continue
			}
			t, ok := d.LinkSec[e.Name]
			if !ok {
				if p.DefaultLinkSec <= 0 {
					return nil, invalid(fmt.Sprintf("devices[%q].link_s", d.Name),
						"has no time to %q; measure the link or set default_link_s", e.Name)
				}
				t = p.DefaultLinkSec
			}
			if t < 0 || math.IsNaN(t) || math.IsInf(t, 0) {
				return nil, invalid(fmt.Sprintf("devices[%q].link_s.%s", d.Name, e.Name), "is %v; a time is finite and ≥ 0", t)
			}
			q.link[i][j] = t
		}
	}
	h := q.devs[0]
	q.rowSec = float64(m.InputBytes/int64(m.Vocab)) / h.disk
	return q, nil
}

// moe validates a MoE model's read, hot and cold-rate terms.
func (q *prob) moe() error {
	m := q.Model
	if m.LayerExpertBytes < 0 || m.LayerExpertBytes > q.b {
		return invalid("model.layer_expert_bytes", "is %d; the experts are part of the layer's %d bytes", m.LayerExpertBytes, q.b)
	}
	if m.LayerReadBytes <= 0 || m.LayerReadBytes > q.b {
		return invalid("model.layer_read_bytes", "is %d; a MoE model's token reads 1 to the layer's %d bytes", m.LayerReadBytes, q.b)
	}
	if m.ExpertSliceBytes < 0 || m.ExpertSliceBytes > max(m.LayerExpertBytes, 0) {
		return invalid("model.expert_slice_bytes", "is %d; an expert's slice is part of the layer's %d expert bytes", m.ExpertSliceBytes, m.LayerExpertBytes)
	}
	if m.LayerHotBytes < 0 || m.LayerHotBytes > q.b {
		return invalid("model.layer_hot_bytes", "is %d; the hot set is 0 to the layer's %d bytes", m.LayerHotBytes, q.b)
	}
	if !(m.ColdReadRate > 0 && m.ColdReadRate <= 1) {
		return invalid("model.cold_read_rate", "is %v; a MoE model's cold bytes are read at a rate in (0, 1]", m.ColdReadRate)
	}
	q.r, q.h, q.rho = m.LayerReadBytes, m.LayerHotBytes, m.ColdReadRate
	return nil
}

// flopsTime is Σ_q f^q / s^q, charging types missing from the profile at
// its slowest measured rate.
func flopsTime(f map[string]float64, s map[string]float64) (float64, bool) {
	slowest := math.Inf(1)
	for _, v := range s {
		if v > 0 && v < slowest {
			slowest = v
		}
	}
	if math.IsInf(slowest, 1) {
		return 0, false
	}
	// Sorted keys: float sums in a fixed order give the same bits every run.
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var t float64
	for _, k := range keys {
		r := s[k]
		if r <= 0 {
			r = slowest
		}
		t += f[k] / r
	}
	return t, true
}

func positive(v float64) bool { return v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }

func (q *prob) derive(d Device, f string, head bool) (dev, error) {
	m := q.Model
	x := dev{Device: d, gpu: d.GPU}
	switch d.OS {
	case Linux, Android:
		x.kind = kindLinux
	case Windows:
		x.kind = kindWindows
	case MacOS:
		x.kind = kindMacNoMetal
		if d.GPU == Metal {
			x.kind = kindMetal
		}
	default:
		return x, invalid(f+".os", "is %q; use linux, macos, windows or android", d.OS)
	}
	switch d.GPU {
	case NoGPU, CUDA:
	case Metal:
		if d.OS != MacOS {
			return x, invalid(f+".gpu", "is metal on %s; Metal exists only on macOS", d.OS)
		}
	default:
		return x, invalid(f+".gpu", "is %q; use cuda, metal or leave it empty", d.GPU)
	}
	if d.OS == MacOS && d.GPU == CUDA {
		return x, invalid(f+".gpu", "is cuda on macOS; use metal or leave it empty")
	}
	for _, v := range []int64{d.RAMAvailable, d.VRAMAvailable, d.MetalBudget, d.MemoryBudget, d.SwapCanSwap, d.SwapAvailable} {
		if v < 0 || v > maxBytes {
			return x, invalid(f, "has a memory size of %d; sizes are bytes between 0 and 1 PiB", v)
		}
	}
	if !positive(d.CPUReadBytesPerSec) {
		return x, invalid(f+".cpu_read_bytes_per_s", "is %v; profile the device's memory read throughput", d.CPUReadBytesPerSec)
	}
	x.disk = d.DiskSeqBytesPerSec
	if x.kind != kindLinux {
		x.disk = d.DiskRandBytesPerSec
	}
	switch {
	case positive(d.DiskFaultBytesPerSec):
		// Measured the way the engine pages: it already holds this OS's
		// read-ahead and fault clustering, so it overrides both.
		x.disk = d.DiskFaultBytesPerSec
	case d.DiskFaultBytesPerSec != 0:
		return x, invalid(f+".disk_fault_read_bytes_per_s", "is %v; a throughput is positive (or 0: not measured)", d.DiskFaultBytesPerSec)
	}
	if !positive(x.disk) {
		return x, invalid(f+".disk_*_read_bytes_per_s", "the %s disk throughput is %v; profile the device's disk", d.OS, x.disk)
	}
	x.slowDsk = x.disk < q.DiskThreshold
	if d.DiskReadAheadBytes < 0 || d.DiskReadAheadBytes > maxBytes {
		return x, invalid(f+".disk_read_ahead_bytes", "is %d; a read-around is 0 (unknown) to 1 PiB", d.DiskReadAheadBytes)
	}
	x.hotB, x.readB = q.hp, float64(q.r)
	if q.isMoE() {
		// x_e: expert bytes a token reads of one layer; φ: what each is
		// read with, its slice plus half the fault read-around, at most the
		// whole stack.
		a := q.b - m.LayerExpertBytes
		xe := float64(max(q.r-a, 0))
		phi := 1.0
		if s := m.ExpertSliceBytes; s > 0 && d.DiskReadAheadBytes > 0 && xe > 0 {
			phi = min(1+float64(d.DiskReadAheadBytes)/float64(2*s), float64(m.LayerExpertBytes)/xe)
		}
		x.traffB = int64(math.Ceil(phi * xe))
		x.readB = float64(a) + phi*xe
	}
	var ok bool
	if x.cpuSec, ok = flopsTime(m.LayerFlops, d.CPUFlops); !ok {
		return x, invalid(f+".cpu_flops", "is empty; profile the CPU's FLOP/s for at least one weight type")
	}
	bp := float64(q.rp) // what a token reads, not what the layer holds
	x.alpha = x.cpuSec + d.KVCopyCPUSec + bp/d.CPUReadBytesPerSec
	if d.GPU != NoGPU {
		if x.gpuSec, ok = flopsTime(m.LayerFlops, d.GPUFlops); !ok {
			return x, invalid(f+".gpu_flops", "is empty for a %s device; profile the GPU or leave gpu empty", d.GPU)
		}
		if !positive(d.GPUReadBytesPerSec) {
			return x, invalid(f+".gpu_read_bytes_per_s", "is %v for a %s device; profile the GPU's read throughput", d.GPUReadBytesPerSec, d.GPU)
		}
		x.beta = x.gpuSec - x.cpuSec + d.KVCopyGPUSec - d.KVCopyCPUSec + bp/d.GPUReadBytesPerSec - bp/d.CPUReadBytesPerSec
	}
	if !d.UMA {
		x.copies = d.HostToGPUSec + d.GPUToHostSec
	}
	if head {
		out, _ := flopsTime(m.OutputFlops, d.CPUFlops)
		x.outSec = out + float64(q.bio)/d.CPUReadBytesPerSec
	}
	capB := func(v int64) int64 {
		if d.MemoryBudget > 0 && d.MemoryBudget < v {
			return d.MemoryBudget
		}
		return v
	}
	x.dAvail = capB(d.RAMAvailable)
	if d.OS == Android {
		x.swap = min(d.SwapCanSwap, d.SwapAvailable)
	}
	// Linux keeps file pages on an active and an inactive list; a page is
	// promoted when used again while inactive, and the inactive list is
	// 1/(1+ratio) of the pages, ratio = √(10·GiB) (1 under 1 GiB:
	// mm/vmscan.c, inactive_is_low). Other systems: half.
	ratio := int64(1)
	if gib := x.ramCap() >> 30; x.kind == kindLinux && gib > 0 {
		ratio = max(int64(math.Sqrt(float64(10*gib))), 1)
	}
	x.inact = x.ramCap() / (1 + ratio)
	if x.kind == kindMetal {
		if d.MetalBudget <= 0 {
			return x, invalid(f+".metal_budget_bytes", "is 0 for a Metal device; read recommendedMaxWorkingSetSize")
		}
		x.dMetal = capB(min(d.MetalBudget, d.RAMAvailable))
	}
	if d.GPU == CUDA {
		x.dCUDA = d.VRAMAvailable
	}
	return x, nil
}

// budget is the memory Algorithm 1 line 1 splits the first window by
// (footnote 6 of 001 §3.3).
func (x *dev) budget() int64 {
	switch {
	case x.kind == kindMetal:
		return x.dMetal
	case x.OS == Android:
		return x.dAvail + x.swap
	}
	return x.dAvail
}

// cio is b_m^cio (eq. 33): the compute buffer plus, on the head, one
// embedding row and the output layer.
func (q *prob) cio(x *dev, head bool) int64 {
	c := q.Model.CPUBufferBytes
	if head {
		c += q.bio
	}
	return c
}

// ramCap is the memory the RAM rows compare against: d^avail (+ swap-out on
// Android), or the Metal working set.
func (x *dev) ramCap() int64 {
	if x.kind == kindMetal {
		return x.dMetal
	}
	return x.dAvail + x.swap
}

// need is the memory the RAM row of this device's OS asks for at (l, g)
// layers per token, in bytes: compared with ramCap it decides overload.
func (q *prob) need(x *dev, head bool, l, g int) int64 {
	if x.kind == kindMetal {
		return int64(l)*q.bp + q.cio(x, head) + q.Model.GPUBufferBytes
	}
	return int64(l-g)*q.bp + q.cio(x, head)
}

// hotMax is the row that decides between re-reading the overflow and
// re-reading everything, as the most CPU layers per round it allows.
// Dense (the window row, package doc): one window's CPU layers fit,
// (w−n)·b' + c^cpu ≤ d. MoE (package doc, "Mixture of experts"): the hot
// sets of all the device's CPU layers fit, k(w−n)·h' + b^cio ≤ d, and one
// token's expert reads pass through the inactive list without pushing a
// hot page out before its next use, k(w−n)·φ·x_e ≤ d_inact. Metal
// re-reads everything when short (M2), so its row decides nothing.
func (q *prob) hotMax(x *dev, head bool, k int) int64 {
	capB := x.ramCap()
	if !q.isMoE() {
		return floorDiv(capB-q.Model.CPUBufferBytes, q.hp)
	}
	v := floorDiv(capB-q.cio(x, head), int64(k)*x.hotB)
	if x.traffB > 0 {
		v = min(v, floorDiv(x.inact, int64(k)*x.traffB))
	}
	return v
}

// isMoE reports whether the model's tokens read less than its layers.
func (q *prob) isMoE() bool { return q.Model.LayerReadBytes != 0 }

// hotFits reports whether the hot row holds at (k, w, n).
func (q *prob) hotFits(x *dev, head bool, k, w, n int) bool {
	return int64(w-n) <= q.hotMax(x, head, k)
}

// floorDiv is integer division rounding down, also for negative numerators
// (den > 0).
func floorDiv(a, den int64) int64 {
	q := a / den
	if (a%den != 0) && (a < 0) {
		q--
	}
	return q
}

// clampInt converts a bound to int, saturating at ±big.
func clampInt(v int64) int {
	const big = 1 << 30
	if v > big {
		return big
	}
	if v < -big {
		return -big
	}
	return int(v)
}
