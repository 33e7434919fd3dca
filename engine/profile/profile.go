package profile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"homering/engine/ggml"
	"homering/engine/gguf"
	"homering/engine/profile/sysinfo"
	"homering/halda"
)

// Version is the format of a Profile; a cached profile of another version is
// measured again.
const Version = 2 // 2: page-fault read throughput

// RequiredTypes are measured on every device whatever the model holds, so a
// cached profile can price the common models.
var requiredTypes = []gguf.Type{gguf.TypeF32, gguf.TypeF16, gguf.TypeQ4_0, gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K}

// Shape is one weight matrix of a layer: Rows rows of K weights of Type.
type Shape struct {
	Type gguf.Type `json:"type"`
	K    int       `json:"k"`
	Rows int       `json:"rows"`
	// Count is how many matrices of this shape one layer holds.
	Count int `json:"count"`
}

func (s Shape) bytes() int64 { return s.Type.RowBytes(int64(s.K)) * int64(s.Rows) }

// Matmul is the timing of one shape.
type Matmul struct {
	Shape
	TypeName string  `json:"type_name"`
	HotSec   float64 `json:"hot_s"`            // weights in cache: compute only
	ColdSec  float64 `json:"cold_s,omitempty"` // weights from RAM: a decode step's real cost
}

// GPU is one GPU ggml's backend registry offers.
type GPU struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Integrated  bool   `json:"integrated,omitempty"`
	FreeBytes   int64  `json:"free_bytes"`
	TotalBytes  int64  `json:"total_bytes"`
}

// Profile is one device's measured profile. The measured part is cached;
// Memory is read again on every Get, since it changes by the second.
type Profile struct {
	Version     int       `json:"version"`
	Fingerprint string    `json:"fingerprint"`
	Key         string    `json:"key"` // fingerprint + what was measured (shapes, threads)
	MeasuredAt  time.Time `json:"measured_at"`
	TookSec     float64   `json:"took_s"`

	OS       string   `json:"os"`
	Arch     string   `json:"arch"`
	CPU      string   `json:"cpu"`
	CPUs     int      `json:"cpus"`
	Threads  int      `json:"threads"`
	Backends []string `json:"backends"`
	// CPUVariant is the CPU backend the kernels were timed on: the variant
	// library chosen at start (x64, haswell, icelake: engine/runner's
	// LoadCPU) or "built-in" (ggml.CPUVariant), then ", our kernels " and
	// the variant of engine/ggml's own (avx512, avx2, ggml: ggml.Kernels).
	CPUVariant string `json:"cpu_variant,omitempty"`
	GPUs       []GPU  `json:"gpus,omitempty"`

	Matmuls []Matmul `json:"matmuls"`
	// CPUFlops is s^{cpu,q}: FLOP/s of ggml's matmul kernels with the
	// weights in cache, by lower-case ggml type name.
	CPUFlops map[string]float64 `json:"cpu_flops"`
	// CPUReadBytesPerSec is 𝒯^cpu: the layer's weight bytes over the time
	// its products take beyond their in-cache time, so that compute plus
	// read equals the measured decode-step time of the layer's products.
	CPUReadBytesPerSec float64 `json:"cpu_read_bytes_per_s"`
	// Probe is the layer probe's result (with a model), from which
	// CPUReadBytesPerSec is derived when present.
	Probe *Probe `json:"probe,omitempty"`
	// MemReadBytesPerSec is the plain streaming read bandwidth of RAM with
	// Threads readers (informational).
	MemReadBytesPerSec float64 `json:"mem_read_bytes_per_s"`

	// GPU holds the first GPU's measured rates (discrete GPUs only).
	GPU *GPURates `json:"gpu_rates,omitempty"`

	Disk   sysinfo.Disk   `json:"disk"`
	Memory sysinfo.Memory `json:"memory"`
}

// Options say what to measure.
type Options struct {
	// Model, when set, is the GGUF whose layer shapes the matmuls are timed
	// at and whose disk is measured. Without it a 4096-wide layer is used
	// and the disk of ScratchDir.
	Model string
	// Threads is the thread count windows will use (default: all cores).
	Threads int
	// ScratchDir holds a temporary file to measure the disk when there is no
	// model (default: the OS temp dir).
	ScratchDir string
	// MatmulTime is spent per shape (default 120 ms).
	MatmulTime time.Duration
	// Disk bounds the disk measurement.
	Disk sysinfo.DiskLimits
	// Seed seeds the random disk offsets.
	Seed uint64
	// FaultBytes is how much of the model the page-fault sweep reads
	// (default 288 MiB: three sweeps of 96 MiB, long enough to average
	// out the disk's hiccups).
	FaultBytes int64
	// Progress, when set, is told each step as it starts (Done steps of
	// Total finished) and once more at the end (Done == Total): the
	// agent's progress bar. Called on Measure's goroutine.
	Progress func(Step)
}

// Step is how far a measurement is: Done of Total steps finished, and what
// the next one measures.
type Step struct {
	Done  int    `json:"done"`
	Total int    `json:"total"`
	Phase string `json:"phase"`
}

func (o Options) withDefaults() Options {
	if o.Threads <= 0 {
		o.Threads = runtime.NumCPU()
	}
	if o.MatmulTime <= 0 {
		o.MatmulTime = 120 * time.Millisecond
	}
	if o.ScratchDir == "" {
		o.ScratchDir = os.TempDir()
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.FaultBytes <= 0 {
		o.FaultBytes = 288 << 20
	}
	return o
}

// Sentinels.
var (
	ErrNoShapes = errors.New("profile: the model has no weight matrices in its first layer")
)

// LayerShapes lists the weight matrices of the model's first layer (the
// layers of the models Homering runs are alike) and its output matrix.
func LayerShapes(path string) (layer []Shape, output *Shape, err error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, nil, err
	}
	l, err := f.Layout()
	if err != nil {
		return nil, nil, err
	}
	if len(l.Layers) == 0 {
		return nil, nil, fmt.Errorf("%w: %s", ErrNoShapes, path)
	}
	byName := map[string]gguf.TensorInfo{}
	for _, t := range f.Tensors {
		byName[t.Name] = t
	}
	shape := func(name string) (Shape, bool) {
		t, ok := byName[name]
		if !ok || len(t.Shape) < 2 || t.Shape[1] <= 1 {
			return Shape{}, false // norms and biases are vectors: no matmul
		}
		rows := int64(1)
		for _, d := range t.Shape[1:] {
			rows *= d
		}
		return Shape{Type: t.Type, K: int(t.Shape[0]), Rows: int(rows), Count: 1}, true
	}
	for _, n := range l.Layers[0].Tensors {
		s, ok := shape(n)
		if !ok {
			continue
		}
		if i := slices.IndexFunc(layer, func(o Shape) bool { return o.Type == s.Type && o.K == s.K && o.Rows == s.Rows }); i >= 0 {
			layer[i].Count++
			continue
		}
		layer = append(layer, s)
	}
	if len(layer) == 0 {
		return nil, nil, fmt.Errorf("%w: %s", ErrNoShapes, path)
	}
	name := "output.weight"
	if _, ok := byName[name]; !ok {
		name = "token_embd.weight"
	}
	if s, ok := shape(name); ok {
		output = &s
	}
	return layer, output, nil
}

// WeightTypes lists the types of every weight matrix of the model's layers
// and its output head (token_embd when tied), in ggml's order: a mixed file
// (Q4_K_M's Q6_K attn_v and ffn_down in some layers, an MoE's Q8_0
// attention) holds types its first layer, which LayerShapes describes, may
// not.
func WeightTypes(path string) ([]gguf.Type, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	head := "output.weight"
	if _, ok := f.Tensor(head); !ok {
		head = "token_embd.weight"
	}
	var out []gguf.Type
	for _, t := range f.Tensors {
		if len(t.Shape) < 2 || t.Shape[1] <= 1 || !strings.HasPrefix(t.Name, "blk.") && t.Name != head {
			continue
		}
		if !slices.Contains(out, t.Type) {
			out = append(out, t.Type)
		}
	}
	slices.Sort(out)
	return out, nil
}

// defaultLayer stands in for a model: a 4096-wide Q4_K layer.
var defaultLayer = []Shape{{Type: gguf.TypeQ4_K, K: 4096, Rows: 4096, Count: 4}, {Type: gguf.TypeQ4_K, K: 4096, Rows: 11008, Count: 3}}

// Measure profiles this device now. It takes a few seconds (see the package
// doc for the budget) and uses every thread it is told to.
func Measure(ctx context.Context, o Options, log *slog.Logger) (Profile, error) {
	o = o.withDefaults()
	start := time.Now()
	layer, output := defaultLayer, (*Shape)(nil)
	var modelTypes []gguf.Type
	if o.Model != "" {
		var err error
		if layer, output, err = LayerShapes(o.Model); err != nil {
			return Profile{}, err
		}
		if modelTypes, err = WeightTypes(o.Model); err != nil {
			return Profile{}, err
		}
	}
	mem, err := sysinfo.ReadMemory()
	if err != nil {
		return Profile{}, err
	}
	p := Profile{
		Version: Version, OS: runtime.GOOS, Arch: runtime.GOARCH, CPU: sysinfo.CPUModel(),
		CPUs: runtime.NumCPU(), Threads: o.Threads, Backends: []string{"cpu"}, Memory: mem,
		CPUVariant: cpuVariant(),
	}
	p.GPUs = gpus()
	for _, g := range p.GPUs {
		if b := backendOf(g.Name); !slices.Contains(p.Backends, b) {
			p.Backends = append(p.Backends, b)
		}
	}
	p.Fingerprint = fingerprint(mem)
	p.Key = key(p.Fingerprint, o.Threads, layer, output, modelTypes, p.GPUs)

	// The steps, counted ahead for the progress bar: each layer shape, each
	// further type, memory, the layer probe (with a model), disk, faults.
	var shapes []Shape
	seen := map[string]bool{}
	for _, s := range layer {
		if !ggml.CanProfileType(int(s.Type)) {
			log.Warn("profile: weight type not measurable; Halda charges it at the slowest rate", "type", s.Type.String())
			continue
		}
		shapes = append(shapes, s)
		seen[typeKey(s.Type)] = true
	}
	// Every other type the model holds (a mixed file's), then the required.
	extra := append(slices.Clone(modelTypes), requiredTypes...)
	if output != nil {
		extra = append([]gguf.Type{output.Type}, extra...)
	}
	var extraTypes []gguf.Type
	for _, t := range extra {
		if k := typeKey(t); !seen[k] && ggml.CanProfileType(int(t)) {
			seen[k] = true
			extraTypes = append(extraTypes, t)
		}
	}
	total := len(shapes) + len(extraTypes) + 3
	if len(p.GPUs) > 0 && !p.GPUs[0].Integrated {
		total++
	}
	if o.Model != "" {
		total++
	}
	done := 0
	step := func(phase string) error {
		if o.Progress != nil {
			o.Progress(Step{Done: done, Total: total, Phase: phase})
		}
		done++
		return ctx.Err()
	}

	// Matmuls: each layer shape hot and cold; the output's and each
	// required type's hot rate at the layer's width.
	k, err := timeKernels(shapes, extraTypes, layer[0].K, func(s Shape, cold bool) (Matmul, error) {
		if cold {
			if err := step(fmt.Sprintf("CPU kernels: %s %d×%d", typeKey(s.Type), s.K, s.Rows)); err != nil {
				return Matmul{}, err
			}
		} else if err := step("CPU kernels: " + typeKey(s.Type)); err != nil {
			return Matmul{}, err
		}
		return timeShape(s, o, cold)
	})
	if err != nil {
		return Profile{}, err
	}
	p.Matmuls, p.CPUFlops, p.CPUReadBytesPerSec = k.matmuls, k.flops, k.readBytesPerSec
	layerFlops := layerFlopsByType(layer) // for the probe
	if err := step("memory bandwidth"); err != nil {
		return Profile{}, err
	}
	p.MemReadBytesPerSec = memBandwidth(o.Threads)
	// Hand the bandwidth buffer back now: under a memory limit a dead heap
	// of 256 MiB would push the probe's layers out to disk.
	debug.FreeOSMemory()

	// With a model, the layer probe measures a whole layer on the engine;
	// 𝒯 is then set so that Halda's per-layer time f/s + b'/𝒯 equals it:
	// the matmul-only split misses attention, norms and per-op costs.
	if o.Model != "" {
		if err := step("one layer on the engine"); err != nil {
			return Profile{}, err
		}
		pr, err := probeLayers(o.Model, o.Threads, mem.Available, false)
		if err == nil && !(pr.LayerSec > 0) {
			// Three layers no slower than one: noise on a busy machine.
			err = fmt.Errorf("profile: the layer probe measured %v s per layer", pr.LayerSec)
		}
		if err != nil {
			log.Warn("profile: layer probe failed; memory throughput from the matmuls alone", "err", err)
		} else {
			layerFlops["f16"] += pr.AttnFlops
			var scale float64
			p.CPUReadBytesPerSec, scale = fitProbe(p.CPUFlops, layerFlops, pr)
			if scale > 1 {
				log.Warn("profile: the matmul rates put more than half a layer's probed time in compute; scaled up (a busy machine preempting the thread pool)", "factor", scale)
				pr.FlopsScale = scale
			}
			p.Probe = &pr
		}
	}

	if len(p.GPUs) > 0 && !p.GPUs[0].Integrated {
		if err := step("GPU kernels"); err != nil {
			return Profile{}, err
		}
		g, err := measureGPU(o, layer, shapes, extraTypes, log)
		if err != nil {
			// A GPU that cannot be measured is left out of planning, not
			// fatal: the CPU's profile still stands.
			log.Warn("profile: GPU not measured; planning without it", "gpu", p.GPUs[0].Name, "err", err)
		} else {
			p.GPU = g
		}
	}

	// Scratch files of a measurement killed before its cleanup.
	dirs := []string{o.ScratchDir}
	if o.Model != "" {
		dirs = append(dirs, filepath.Dir(o.Model))
	}
	for _, dir := range dirs {
		if n, _ := sysinfo.RemoveStaleScratch(dir, time.Hour, time.Now()); n > 0 {
			log.Info("profile: removed scratch files an earlier measurement left", "dir", dir, "files", n)
		}
	}
	// Disk: the model's own file, else a scratch file in its place.
	// A model file too small to time a disk on (a test model) is
	// replaced by a scratch file next to it: same disk.
	if err := step("disk read throughput"); err != nil {
		return Profile{}, err
	}
	diskPath := o.Model
	if st, err := os.Stat(diskPath); diskPath != "" && err == nil && st.Size() < 64<<20 {
		o.ScratchDir, diskPath = filepath.Dir(diskPath), ""
	}
	if diskPath == "" {
		name, err := sysinfo.ScratchFile(o.ScratchDir, 32<<20)
		if err != nil {
			return Profile{}, err
		}
		defer os.Remove(name)
		diskPath = name
	}
	d, err := sysinfo.ReadThroughput(diskPath, o.Disk, rand.New(rand.NewPCG(o.Seed, 0x686f6d65)))
	if err != nil {
		return Profile{}, err
	}
	if diskPath != o.Model {
		d.Path = filepath.Dir(diskPath)
	}
	// Page faults: what paging the weights in really gets from this disk.
	// A scratch file goes next to the model (same disk), else to ScratchDir.
	faultDir := o.ScratchDir
	if o.Model != "" {
		faultDir = filepath.Dir(o.Model)
	}
	if err := step("page-fault reads"); err != nil {
		return Profile{}, err
	}
	fault, scratch, err := measureFault(o.Model, faultDir, o.FaultBytes, log)
	switch {
	case err == nil:
		d.FaultBytesPerSec, d.FaultScratch = fault, scratch
	case errors.Is(err, sysinfo.ErrFaultUnsupported):
		log.Debug("profile: page-fault throughput not measured here; Halda uses the direct-read throughputs", "err", err)
	case errors.Is(err, sysinfo.ErrFaultCached):
		// A scratch file on tmpfs: its pages are the file and never leave.
		log.Warn("profile: page-fault throughput not measured (the scratch file's pages cannot be dropped); Halda uses the direct-read throughputs", "err", err)
	default:
		return Profile{}, err
	}
	d.ReadAheadBytes, _ = sysinfo.ReadAheadBytes(faultDir)
	p.Disk = d
	if err := p.validate(); err != nil {
		return Profile{}, fmt.Errorf("profile: the measurement is unusable (%w); measure again on a quieter machine", err)
	}
	p.MeasuredAt = time.Now().UTC()
	p.TookSec = time.Since(start).Seconds()
	if o.Progress != nil {
		o.Progress(Step{Done: total, Total: total, Phase: "done"})
	}
	log.Debug("profile: measured", "took", time.Since(start), "key", p.Key)
	return p, nil
}

// maxComputeShare bounds the compute part of a probed layer: a decode step
// streams the layer's weights from RAM, so compute is never most of it (on
// this machine with one thread it is about 30%).
const maxComputeShare = 0.5

// fitProbe sets 𝒯 so that Halda's per-layer time f/s + b'/𝒯 equals the
// probe's layer time. The hot matmul rates come from the slope of two short
// timings, which a preempted pool thread wrecks on a busy machine (seen:
// 0.2-0.5 GFLOPS for q8_0 with 2 threads against 20 with 1): when they put
// more than maxComputeShare of the layer in compute, every rate in flops is
// multiplied by scale > 1 so that compute is that share, keeping the layer
// at its measured time. flops is changed in place.
func fitProbe(flops, layerFlops map[string]float64, pr Probe) (readBytesPerSec, scale float64) {
	var compute float64
	for k, f := range layerFlops {
		if s := flops[k]; s > 0 {
			compute += f / s
		}
	}
	scale = 1
	if limit := maxComputeShare * pr.LayerSec; compute > limit {
		scale = compute / limit
		for k := range flops {
			flops[k] *= scale
		}
		compute = limit
	}
	return float64(pr.LayerBytes) / (pr.LayerSec - compute), scale
}

func gpus() []GPU {
	var out []GPU
	for _, g := range ggml.GPUDevices() {
		out = append(out, GPU{Name: g.Name, Description: g.Description, Integrated: g.Integrated,
			FreeBytes: int64(g.FreeBytes), TotalBytes: int64(g.TotalBytes)})
	}
	return out
}

// kernels is what timing a layer's matrix products gives: Halda's s
// (FLOP/s per type, weights in cache) and a first 𝒯 (the layer's bytes over
// its products' time beyond their in-cache time), which a layer probe then
// refines.
type kernels struct {
	matmuls         []Matmul
	flops           map[string]float64
	readBytesPerSec float64
}

// timeKernels times each shape hot and cold, then each extra type hot at
// the layer's width (rows 4096), with timer (the CPU's or a GPU's).
func timeKernels(shapes []Shape, extra []gguf.Type, width int, timer func(s Shape, cold bool) (Matmul, error)) (kernels, error) {
	k := kernels{flops: map[string]float64{}}
	var hot, coldExtra float64
	var bytes int64
	rate := map[string][2]float64{} // type → (flops, hot seconds)
	addRate := func(t gguf.Type, f, s float64) {
		r := rate[typeKey(t)]
		rate[typeKey(t)] = [2]float64{r[0] + f, r[1] + s}
	}
	for _, s := range shapes {
		m, err := timer(s, true)
		if err != nil {
			return kernels{}, err
		}
		k.matmuls = append(k.matmuls, m)
		hot += m.HotSec * float64(s.Count)
		coldExtra += (m.ColdSec - m.HotSec) * float64(s.Count)
		bytes += s.bytes() * int64(s.Count)
		addRate(s.Type, 2*float64(s.K)*float64(s.Rows)*float64(s.Count), m.HotSec*float64(s.Count))
	}
	if bytes == 0 {
		return kernels{}, fmt.Errorf("%w (none of its types can be timed)", ErrNoShapes)
	}
	// A compute-bound layer can show no read cost at all; keep 𝒯 finite.
	coldExtra = max(coldExtra, 0.01*(hot+coldExtra))
	k.readBytesPerSec = float64(bytes) / coldExtra
	for _, t := range extra {
		kk := width
		if b := int(t.BlockSize()); kk%b != 0 {
			kk = (kk + b - 1) / b * b
		}
		s := Shape{Type: t, K: kk, Rows: 4096, Count: 1}
		m, err := timer(s, false)
		if err != nil {
			return kernels{}, err
		}
		k.matmuls = append(k.matmuls, m)
		addRate(t, 2*float64(s.K)*float64(s.Rows), m.HotSec)
	}
	for t, r := range rate {
		if r[1] > 0 {
			k.flops[t] = r[0] / r[1]
		}
	}
	return k, nil
}

// layerFlopsByType is a layer's matrix FLOPs per token by weight type.
func layerFlopsByType(layer []Shape) map[string]float64 {
	f := map[string]float64{}
	for _, s := range layer {
		f[typeKey(s.Type)] += 2 * float64(s.K) * float64(s.Rows) * float64(s.Count)
	}
	return f
}

func timeShape(s Shape, o Options, cold bool) (Matmul, error) {
	t, err := ggml.TimeMatmul(int(s.Type), s.K, s.Rows, o.Threads, o.MatmulTime, cold)
	if err != nil {
		return Matmul{}, fmt.Errorf("profile: time %s %dx%d: %w", s.Type, s.K, s.Rows, err)
	}
	return Matmul{Shape: s, TypeName: typeKey(s.Type), HotSec: t.Hot.Seconds(), ColdSec: t.Cold.Seconds()}, nil
}

// memBandwidth reads a 256 MiB buffer with one reader per thread and returns
// the best of three passes in bytes/s.
func memBandwidth(threads int) float64 {
	const size = 256 << 20
	buf := make([]byte, size)
	for i := 0; i < size; i += 4096 {
		buf[i] = byte(i) // fault the pages in before timing
	}
	part := size / threads &^ 63
	best := 0.0
	for range 3 {
		var wg sync.WaitGroup
		t := sysinfo.Now()
		for i := range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ggml.SumBytes(buf[i*part : (i+1)*part])
			}()
		}
		wg.Wait()
		best = max(best, float64(part*threads)/sysinfo.Since(t).Seconds())
	}
	return best
}

// typeKey is halda's key for a weight type: ggml's name in lower case, as
// app's GGUF converter writes the model's maps.
func typeKey(t gguf.Type) string { return strings.ToLower(t.String()) }

func backendOf(dev string) string {
	d := strings.ToLower(dev)
	for _, b := range []string{"cuda", "metal", "vulkan", "rocm", "hip", "opencl", "sycl"} {
		if strings.HasPrefix(d, b) {
			return b
		}
	}
	return strings.TrimRight(d, "0123456789")
}

// fingerprint names the machine: what a process sees without loading any
// backend library. GPUs are not in it: the agent, which never loads GPU
// libraries (a crashing driver must not take it down), reads the profiles
// its engine child and `homering profile` measured with them, so it must
// find them by the machine alone. The GPUs are in each entry's key.
func fingerprint(mem sysinfo.Memory) string {
	// The machine's RAM, not a cgroup's limit: a memory limit must not
	// invalidate the compute profile.
	return sysinfo.Fingerprint(mem.Total)
}

// key names one measurement: the machine plus what was measured, with
// which GPUs.
func key(fp string, threads int, layer []Shape, output *Shape, types []gguf.Type, gpus []GPU) string {
	var b strings.Builder
	fmt.Fprintf(&b, "v%d t%d", Version, threads)
	for _, g := range gpus {
		fmt.Fprintf(&b, " gpu=%s/%s/%d", g.Name, g.Description, g.TotalBytes>>28)
	}
	for _, s := range layer {
		fmt.Fprintf(&b, " %d:%dx%dx%d", s.Type, s.K, s.Rows, s.Count)
	}
	if output != nil {
		fmt.Fprintf(&b, " out%d", output.Type)
	}
	// A mixed file's types beyond its first layer's and head's are rated too
	// (a single-type model's key is as it was).
	for _, t := range types {
		if !slices.ContainsFunc(layer, func(s Shape) bool { return s.Type == t }) && (output == nil || output.Type != t) {
			fmt.Fprintf(&b, " +%d", t)
		}
	}
	// Another CPU variant's kernels run at other rates: measured again.
	if v := ggml.CPUVariant(); v != ggml.BuiltinCPU {
		fmt.Fprintf(&b, " cpu=%s", v)
	}
	// So do our kernels forced to a variant other than the best.
	if k, err := ggml.Kernels(); err == nil {
		if vs := ggml.KernelVariants(); k != vs[len(vs)-1] {
			fmt.Fprintf(&b, " kernels=%s", k)
		}
	}
	h := sha256.Sum256([]byte(b.String()))
	return fp + "-" + hex.EncodeToString(h[:4])
}

// cpuVariant names the CPU kernels a profile is timed on: the variant of
// ggml's CPU backend and that of our own matrix kernels (ggml.Kernels).
func cpuVariant() string {
	k, err := ggml.Kernels()
	if err != nil { // a forced variant this CPU cannot run: no window opens
		return ggml.CPUVariant()
	}
	return ggml.CPUVariant() + ", our kernels " + k
}

// Device converts the profile into Halda's device entry. name identifies the
// device in a plan (empty: the host name).
func (p Profile) Device(name string) halda.Device {
	if name == "" {
		name, _ = os.Hostname()
	}
	d := halda.Device{
		Name:                 name,
		OS:                   haldaOS(p.OS),
		CPUFlops:             p.CPUFlops,
		CPUReadBytesPerSec:   p.CPUReadBytesPerSec,
		RAMAvailable:         p.Memory.Available,
		RAMTotal:             p.Memory.Total,
		DiskSeqBytesPerSec:   p.Disk.SeqBytesPerSec,
		DiskRandBytesPerSec:  p.Disk.RandBytesPerSec,
		DiskFaultBytesPerSec: p.Disk.FaultBytesPerSec,
		DiskReadAheadBytes:   p.Disk.ReadAheadBytes,
	}
	if d.OS == halda.Android {
		d.SwapAvailable = p.Memory.SwapFree
	}
	d.CPUVariant = p.CPUVariant
	p.fillGPU(&d)
	return d
}

func haldaOS(goos string) halda.OS {
	switch goos {
	case "darwin", "ios":
		return halda.MacOS
	case "windows":
		return halda.Windows
	case "android":
		return halda.Android
	}
	return halda.Linux
}

// validate says why a profile cannot be trusted, or nil.
func (p Profile) validate() error {
	ok := func(v float64) bool { return v > 0 && !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case p.Version != Version:
		return fmt.Errorf("version %d, want %d", p.Version, Version)
	case len(p.CPUFlops) == 0:
		return errors.New("no CPU FLOPS")
	case !ok(p.CPUReadBytesPerSec) || !ok(p.MemReadBytesPerSec):
		return errors.New("memory read throughput is not a positive number")
	case !ok(p.Disk.SeqBytesPerSec) || !ok(p.Disk.RandBytesPerSec):
		return errors.New("disk throughput is not a positive number")
	case p.Disk.FaultBytesPerSec != 0 && !ok(p.Disk.FaultBytesPerSec):
		return errors.New("page-fault read throughput is not a positive number")
	case p.Threads < 1:
		return errors.New("no thread count")
	}
	for k, v := range p.CPUFlops {
		if !ok(v) {
			return fmt.Errorf("CPU FLOPS of %s is %v", k, v)
		}
	}
	return nil
}
