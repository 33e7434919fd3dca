package haldatest

import (
	"fmt"
	"math/rand/v2"

	"homering/halda"
)

// RandomProblem draws a problem with 1..maxDevices devices and 1..maxLayers
// layers whose memory sizes straddle the model's, so that every case (M1-M5),
// slow disks, GPU caps and infeasible ks all occur. Same seed, same problem.
func RandomProblem(r *rand.Rand, maxDevices, maxLayers int) halda.Problem {
	L := 1 + r.IntN(maxLayers)
	layer := int64(50e6 + r.Float64()*450e6)
	m := halda.Model{
		Name:            "random",
		Layers:          L,
		LayerBytes:      map[string]int64{"q4_k": layer * 4 / 5, "q6_k": layer / 5},
		LayerFlops:      map[string]float64{"q4_k": float64(layer) * 3, "q6_k": float64(layer) * 0.5},
		InputBytes:      int64(r.IntN(4)) * layer,
		OutputBytes:     int64(r.IntN(3)) * layer,
		OutputFlops:     map[string]float64{"q6_k": float64(layer) * 2},
		Vocab:           32000,
		Embedding:       4096,
		KVBytesPerToken: int64(r.IntN(3)) * 4096,
		ContextTokens:   1024 * r.IntN(5),
		CPUBufferBytes:  int64(r.IntN(3)) * 64 << 20,
		GPUBufferBytes:  int64(r.IntN(3)) * 64 << 20,
	}
	model := float64(int64(L)*layer + m.InputBytes + m.OutputBytes)
	n := 1 + r.IntN(maxDevices)
	ds := make([]halda.Device, n)
	for i := range ds {
		ds[i] = randomDevice(r, fmt.Sprintf("d%d", i), model/float64(n))
	}
	linkAll(r, ds)
	return halda.Problem{Devices: ds, Model: m}
}

// Cluster draws n devices of mixed kinds for a model of about modelBytes,
// with enough memory in total that a plan exists: the benchmark's clusters.
func Cluster(r *rand.Rand, n int, modelBytes float64) []halda.Device {
	ds := make([]halda.Device, n)
	for i := range ds {
		ds[i] = randomDevice(r, fmt.Sprintf("d%02d", i), 2*modelBytes/float64(n))
	}
	linkAll(r, ds)
	return ds
}

func randomDevice(r *rand.Rand, name string, share float64) halda.Device {
	oses := []halda.OS{halda.Linux, halda.Linux, halda.MacOS, halda.Windows, halda.Android}
	d := halda.Device{
		Name:                name,
		OS:                  oses[r.IntN(len(oses))],
		CPUFlops:            map[string]float64{"q4_k": 5e10 + r.Float64()*5e11},
		CPUReadBytesPerSec:  1e10 + r.Float64()*5e10,
		KVCopyCPUSec:        r.Float64() * 5e-6,
		RAMAvailable:        int64(share * (0.1 + 1.5*r.Float64())),
		DiskSeqBytesPerSec:  5e7 + r.Float64()*3e9,
		DiskRandBytesPerSec: 5e7 + r.Float64()*1.5e9,
	}
	switch g := r.IntN(3); {
	case g == 1 && d.OS == halda.MacOS:
		d.GPU, d.UMA = halda.Metal, true
		d.MetalBudget = int64(float64(d.RAMAvailable) * (0.5 + r.Float64()))
	case g == 1 && d.OS != halda.Android:
		d.GPU = halda.CUDA
		d.VRAMAvailable = int64(share * 1.2 * r.Float64())
		d.HostToGPUSec, d.GPUToHostSec = 2e-5*r.Float64(), 2e-5*r.Float64()
	}
	if d.GPU != halda.NoGPU {
		d.GPUFlops = map[string]float64{"q4_k": 1e12 + r.Float64()*2e13, "q6_k": 1e12 + r.Float64()*1e13}
		d.GPUReadBytesPerSec = 1e11 + r.Float64()*8e11
		d.KVCopyGPUSec = r.Float64() * 2e-6
	}
	if d.OS == halda.Android {
		d.SwapCanSwap = int64(share * 0.3 * r.Float64())
		d.SwapAvailable = int64(share * 0.3 * r.Float64())
	}
	if r.IntN(4) == 0 {
		d.MemoryBudget = int64(float64(d.RAMAvailable) * (0.5 + r.Float64()))
	}
	return d
}

func linkAll(r *rand.Rand, ds []halda.Device) {
	for i := range ds {
		ds[i].LinkSec = map[string]float64{}
		for j := range ds {
			if i != j {
				ds[i].LinkSec[ds[j].Name] = 1e-3 + r.Float64()*8e-3
			}
		}
	}
}
