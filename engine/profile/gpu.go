package profile

import (
	"fmt"
	"log/slog"
	"slices"

	"homering/engine/ggml"
	"homering/engine/gguf"
	"homering/halda"
)

// GPURates is what the profiler measured on the device's first GPU, in the
// units of halda.Device's GPU fields.
type GPURates struct {
	Device  string   `json:"device"` // ggml's name, e.g. CUDA0
	Matmuls []Matmul `json:"matmuls"`
	// Flops is s^{gpu,q}: FLOP/s of the backend's matmul kernels with the
	// weights in the GPU's L2, by lower-case ggml type name.
	Flops map[string]float64 `json:"flops"`
	// ReadBytesPerSec is 𝒯^gpu, fitted like the CPU's: from the layer probe
	// on the GPU when there is a model, else from the cold matmuls.
	ReadBytesPerSec float64 `json:"read_bytes_per_s"`
	// HostToGPUSec and GPUToHostSec: one hidden state (n_embd F32) copied in
	// and out of VRAM.
	HostToGPUSec float64 `json:"host_to_gpu_s"`
	GPUToHostSec float64 `json:"gpu_to_host_s"`
	Probe        *Probe  `json:"probe,omitempty"`
}

// measureGPU times the layer's measurable shapes and the extra types on GPU
// 0 and, with a model, probes whole layers there.
func measureGPU(o Options, layer, shapes []Shape, extra []gguf.Type, log *slog.Logger) (*GPURates, error) {
	width := layer[0].K
	k, err := timeKernels(shapes, extra, width, func(s Shape, cold bool) (Matmul, error) {
		t, err := ggml.TimeMatmulGPU(0, int(s.Type), s.K, s.Rows, o.MatmulTime, cold)
		if err != nil {
			return Matmul{}, fmt.Errorf("profile: time %s %dx%d on the GPU: %w", s.Type, s.K, s.Rows, err)
		}
		return Matmul{Shape: s, TypeName: typeKey(s.Type), HotSec: t.Hot.Seconds(), ColdSec: t.Cold.Seconds()}, nil
	})
	if err != nil {
		return nil, err
	}
	r := &GPURates{Device: ggml.GPUDevices()[0].Name, Matmuls: k.matmuls, Flops: k.flops, ReadBytesPerSec: k.readBytesPerSec}
	layerFlops := layerFlopsByType(layer)
	up, down, err := ggml.TimeGPUCopy(0, width)
	if err != nil {
		return nil, err
	}
	r.HostToGPUSec, r.GPUToHostSec = up.Seconds(), down.Seconds()
	if o.Model != "" {
		// The layer probe on the GPU: whole layers (attention, norms and
		// kernel launches included) fix 𝒯^gpu as on the CPU.
		pr, err := probeLayers(o.Model, o.Threads, int64(ggml.GPUDevices()[0].FreeBytes), true)
		if err == nil && !(pr.LayerSec > 0) {
			err = fmt.Errorf("profile: the GPU layer probe measured %v s per layer", pr.LayerSec)
		}
		if err != nil {
			log.Warn("profile: GPU layer probe failed; GPU memory throughput from the matmuls alone", "err", err)
		} else {
			layerFlops["f16"] += pr.AttnFlops
			r.ReadBytesPerSec, pr.FlopsScale = fitProbe(r.Flops, layerFlops, pr)
			r.Probe = &pr
		}
	}
	return r, nil
}

// fillGPU sets d's GPU fields from the profile's GPU rates: a discrete GPU
// is planned as CUDA (Halda's kind for a GPU with its own memory, whatever
// its API); an integrated one shares the CPU's RAM, which Halda models for
// Metal alone, so it is left out of planning here.
func (p Profile) fillGPU(d *halda.Device) {
	r := p.GPU
	if r == nil || len(p.GPUs) == 0 {
		return
	}
	i := slices.IndexFunc(p.GPUs, func(g GPU) bool { return g.Name == r.Device })
	if i < 0 || p.GPUs[i].Integrated {
		return
	}
	g := p.GPUs[i]
	d.GPU, d.GPUName = halda.CUDA, g.Name
	if g.Description != "" {
		d.GPUName += " · " + g.Description
	}
	if backendOf(g.Name) == "metal" {
		d.GPU, d.UMA, d.MetalBudget = halda.Metal, true, g.FreeBytes
	} else {
		d.VRAMAvailable = g.FreeBytes
	}
	d.GPUFlops = r.Flops
	d.GPUReadBytesPerSec = r.ReadBytesPerSec
	d.HostToGPUSec, d.GPUToHostSec = r.HostToGPUSec, r.GPUToHostSec
}
