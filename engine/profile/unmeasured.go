package profile

import (
	"runtime"

	"homering/halda"
)

// Unmeasured is a device the profiler has not measured yet: a modest laptop
// CPU (no GPU) with this machine's cores and OS and the given memory. The
// device map and the ring planner use it for this device until a profile is
// cached, and for peers until they answer with their own.
func Unmeasured(name string, ramAvailable, ramTotal int64) halda.Device {
	cores := float64(max(runtime.NumCPU(), 1))
	flops := 5e9 * cores // per core, quantized matmul-vector on AVX2
	return halda.Device{
		Name: name, OS: haldaOS(runtime.GOOS),
		CPUFlops: map[string]float64{"f32": flops / 2, "f16": flops / 2, "bf16": flops / 2, "q8_0": flops, "q4_0": flops,
			"q4_k": flops, "q5_k": flops, "q6_k": flops},
		CPUReadBytesPerSec:  10e9,
		RAMAvailable:        ramAvailable,
		RAMTotal:            ramTotal,
		DiskSeqBytesPerSec:  1e9,
		DiskRandBytesPerSec: 200e6,
	}
}
