package app

import (
	"fmt"

	"homering/app/api/apitype"
)

// layerSplit counts a device's layers over all its windows: on its CPU and
// on its GPU (the first Window.GPU of each window).
func layerSplit(ws []apitype.Window) (cpu, gpu int) {
	for _, w := range ws {
		g := min(w.GPU, w.End-w.Start)
		cpu, gpu = cpu+w.End-w.Start-g, gpu+g
	}
	return cpu, gpu
}

// placement says where a device's layers run, for status lines:
// "12 on the CPU, 4 on the GPU (cuda; VRAM 1.20 GiB planned of 7.80 GiB
// free)", or "16 on the CPU (no GPU)".
func placement(ws []apitype.Window, gpuKind string, vram, vramFree int64) string {
	cpu, gpu := layerSplit(ws)
	if gpuKind == "" && gpu == 0 {
		return fmt.Sprintf("%d on the CPU (no GPU)", cpu)
	}
	return fmt.Sprintf("%d on the CPU, %d on the GPU (%s; VRAM %s planned of %s free)", cpu, gpu, gpuKind, bytesStr(vram), bytesStr(vramFree))
}
