package app

import (
	"bytes"
	"strings"
	"testing"

	"homering/app/api/apitype"
	"homering/discovery/identity"
)

func TestChatArgs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no prompt", []string{"-m", "x.gguf"}, "give a prompt"},
		{"devices other than all", []string{"--devices", "some", "hi"}, `--devices takes only "all"`},
		{"negative rounds", []string{"--rounds", "-1", "hi"}, "--rounds must be 1 or more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := mainWith(append([]string{"chat"}, tt.args...), env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb})
			if code != 2 || !strings.Contains(errb.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errb.String(), tt.want)
			}
		})
	}
}

func TestPrintRing(t *testing.T) {
	gone := identity.IDFromCert([]byte("gone"))
	rtt := 0.25
	r := &apitype.RingRun{K: 2, Layers: 6, PredictedMs: 2.5, MeasuredMs: 6.25, Replans: 1, Lost: []identity.DeviceID{gone}, LossToTokenMs: 40,
		Devices: []apitype.RingDevice{
			{Short: "AAAAAAA", Name: "desk", Case: "M4", Windows: []apitype.Window{{Start: 0, End: 1}, {Start: 3, End: 4}}, PredictedMs: 1, MeasuredMs: 1.5, MemPressure: 0.02, Profile: "measured"},
			{Short: "BBBBBBB", Name: "attic", Case: "M3", Windows: []apitype.Window{{Start: 1, End: 3, GPU: 1}, {Start: 4, End: 6, GPU: 1}}, PredictedMs: 1.5, MeasuredMs: 2, MemPressure: 0.5, RTTMs: &rtt, Profile: "default",
				GPU: "cuda", VRAMBytes: 3 << 29, VRAMFreeBytes: 8 << 30},
			// A GPU that reported what its windows really hold.
			{Short: "CCCCCCC", Name: "cellar", Case: "M4", Windows: []apitype.Window{{Start: 6, End: 8, GPU: 2}}, PredictedMs: 1, MeasuredMs: 1, Profile: "measured",
				GPU: "vulkan", VRAMBytes: 3 << 29, VRAMFreeBytes: 7 << 30, VRAMUsedBytes: 1 << 30},
		}}
	var b bytes.Buffer
	printRing(&b, r)
	for _, want := range []string{"ring: 3 devices, k=2, 6 layers, predicted 2.5 ms/token, measured 6.2 ms/token; 1 re-plan(s) after losing " + gone.Short() + ", loss to next token 40.0 ms",
		"AAAAAAA (head)", "0 3", "1-2 4-5", "50.0%", "0.250", "measured", "default",
		"CPU/GPU", "VRAM", "2/0      -", "2/2      1.50 GiB planned of 8.00 GiB free", "0/2      1.00 GiB used (1.50 GiB planned) of 7.00 GiB free"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}
