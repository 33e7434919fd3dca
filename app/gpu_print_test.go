package app

import (
	"bytes"
	"strings"
	"testing"

	"homering/app/api/apitype"
)

// `homering status` shows per device of the next plan its CPU and GPU
// layers, the VRAM the plan takes and what the device reported free.
func TestPrintNextGPU(t *testing.T) {
	p := apitype.Plan{Model: "m", Layers: 8, K: 2, PredictedMs: 3, Devices: []apitype.MapDevice{
		{Short: "AAAAAAA", Name: "desk", Role: "head", InRing: true, Case: "M4", PredictedMs: 1,
			Windows: []apitype.Window{{Start: 0, End: 2}, {Start: 4, End: 6}}},
		{Short: "BBBBBBB", Name: "gamer", Role: "worker", InRing: true, Case: "M4", PredictedMs: 2, GPU: "cuda", VRAMBytes: 3 << 29, VRAMFreeBytes: 6 << 30,
			Windows: []apitype.Window{{Start: 2, End: 4, GPU: 2}, {Start: 6, End: 8, GPU: 2}}},
		{Short: "CCCCCCC", Name: "mac", Role: "idle", GPU: "metal", VRAMFreeBytes: 4 << 30},
	}}
	var b bytes.Buffer
	printNext(&b, p)
	for _, want := range []string{
		"AAAAAAA desk       head   layers 0-1 4-5, case M4, 1.00 ms; 4 on the CPU (no GPU)",
		"BBBBBBB gamer      worker layers 2-3 6-7, case M4, 2.00 ms; 0 on the CPU, 4 on the GPU (cuda; VRAM 1.50 GiB planned of 6.00 GiB free)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "mac") {
		t.Errorf("a device outside the ring is listed:\n%s", b.String())
	}
}
