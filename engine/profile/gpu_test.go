package profile

import (
	"testing"

	"homering/halda"
)

// Device carries the measured GPU into Halda's device: a discrete GPU as
// CUDA with its free memory, Metal as unified memory with its budget, and
// an integrated GPU (which Halda's memory model does not cover) not at all.
func TestDeviceGPUFields(t *testing.T) {
	rates := &GPURates{Device: "X0", Flops: map[string]float64{"q4_k": 6e12}, ReadBytesPerSec: 5e11, HostToGPUSec: 1e-5, GPUToHostSec: 2e-5}
	for _, tc := range []struct {
		name   string
		gpu    GPU
		rates  *GPURates
		want   halda.GPU
		vram   int64
		budget int64
	}{
		{"discrete CUDA", GPU{Name: "CUDA0", FreeBytes: 8 << 30}, rates, halda.CUDA, 8 << 30, 0},
		{"discrete Vulkan plans as CUDA", GPU{Name: "Vulkan0", FreeBytes: 4 << 30}, rates, halda.CUDA, 4 << 30, 0},
		{"Metal: unified memory", GPU{Name: "Metal", FreeBytes: 12 << 30}, rates, halda.Metal, 0, 12 << 30},
		{"integrated: left out", GPU{Name: "Vulkan0", Integrated: true, FreeBytes: 2 << 30}, rates, halda.NoGPU, 0, 0},
		{"not measured: left out", GPU{Name: "CUDA0", FreeBytes: 8 << 30}, nil, halda.NoGPU, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.rates
			if r != nil {
				c := *r
				c.Device = tc.gpu.Name
				r = &c
			}
			p := Profile{OS: "linux", GPUs: []GPU{tc.gpu}, GPU: r, CPUFlops: map[string]float64{"q4_k": 1e11}}
			d := p.Device("d")
			if d.GPU != tc.want || d.VRAMAvailable != tc.vram || d.MetalBudget != tc.budget {
				t.Fatalf("GPU %q VRAM %d Metal budget %d, want %q %d %d", d.GPU, d.VRAMAvailable, d.MetalBudget, tc.want, tc.vram, tc.budget)
			}
			if tc.want != halda.NoGPU && (d.GPUFlops["q4_k"] != 6e12 || d.GPUReadBytesPerSec != 5e11 || d.HostToGPUSec != 1e-5 || d.GPUToHostSec != 2e-5) {
				t.Errorf("rates not carried: %+v", d)
			}
			if tc.want == halda.NoGPU && (d.GPUFlops != nil || d.GPUReadBytesPerSec != 0) {
				t.Errorf("rates of an unplanned GPU carried: %+v", d)
			}
		})
	}
}
