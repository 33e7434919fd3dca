package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"homering/engine/gguf"
	"homering/halda"
)

func runPlan(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runCmd(t, append([]string{"plan"}, args...)...)
}

const (
	testbed = "../halda/testdata/devices.json"
	shape70 = "../halda/testdata/llama3-70b-q4k.json"
	shape8  = "../halda/testdata/llama3-8b-q4k.json"
)

func TestPlanTable(t *testing.T) {
	code, out, errs := runPlan(t, "--devices", testbed, "--shape", shape70, "--baselines")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"k=2 round(s) of 40 layers", "D1 (head)", "DEVICE", "LAYERS PER ROUND", "M3", "MemSched:", "PerfSched:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestPlanRounds: --rounds fixes k (70B on the testbed takes k=2 freely).
func TestPlanRounds(t *testing.T) {
	code, out, errs := runPlan(t, "--devices", testbed, "--shape", shape70, "--rounds", "4", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var p halda.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("not a plan: %v\n%s", err, out)
	}
	if p.K != 4 || p.Window != 20 {
		t.Errorf("--rounds 4: k=%d window %d, want k=4 and windows of 20 layers", p.K, p.Window)
	}
	if code, _, errs := runPlan(t, "--devices", testbed, "--shape", shape70, "--rounds", "3"); code == 0 || !strings.Contains(errs, "rounds") {
		t.Errorf("--rounds 3 on 80 layers: exit %d, %q; want an error naming rounds", code, errs)
	}
}

func TestPlanJSON(t *testing.T) {
	code, out, errs := runPlan(t, "--devices", testbed, "--shape", shape8, "--head", "D3", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var p halda.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("not a plan: %v\n%s", err, out)
	}
	if len(p.Ring) != 1 || p.Ring[0].Device != "D3" || p.Ring[0].W != 32 || len(p.Dropped) != 3 {
		t.Errorf("8B on D1-D4 with head D3: ring %+v dropped %+v, want D3 alone with 32 layers", p.Ring, p.Dropped)
	}
}

// TestPlanDeviceFiles: a profile file with one device (what `homering
// profile --json` writes) combines with others; unknown fields are refused.
func TestPlanDeviceFiles(t *testing.T) {
	b, err := os.ReadFile(testbed)
	if err != nil {
		t.Fatal(err)
	}
	var ds []halda.Device
	if err := json.Unmarshal(b, &ds); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var files []string
	for _, d := range ds {
		f := filepath.Join(dir, d.Name+".json")
		b, _ := json.Marshal(d)
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	code, out, errs := runPlan(t, "--devices", strings.Join(files[:2], ","), "--devices", strings.Join(files[2:], ","), "--shape", shape70)
	if code != 0 || !strings.Contains(out, "k=2") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"name":"x","os":"linux","ram_avail_bytes":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"misspelt field", []string{"--devices", bad, "--shape", shape8}, 1, "unknown field"},
		{"no model", []string{"--devices", testbed}, 2, "exactly one of --model or --shape"},
		{"unknown head", []string{"--devices", testbed, "--shape", shape8, "--head", "D9"}, 1, `--head "D9" names no device`},
		{"missing file", []string{"--devices", filepath.Join(dir, "none.json"), "--shape", shape8}, 1, "read the devices file"},
		{"infeasible", []string{"--devices", files[3], "--shape", shape70, "--context", "1000000"}, 1, "no feasible plan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runPlan(t, tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.msg) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errs, tt.code, tt.msg)
			}
		})
	}
}

// planStories is a real trained GGUF shared by the team's tests.
const planStories = "../../shared/models/stories260K.gguf"

// TestPlanFromGGUF: --model reads the shape and per-layer bytes through
// engine/gguf, and the bytes add up to the file's tensors.
func TestPlanFromGGUF(t *testing.T) {
	m, err := modelFromGGUF(planStories, 0)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(planStories)
	if err != nil {
		t.Fatal(err)
	}
	var tensors int64
	for _, ti := range f.Tensors {
		tensors += ti.Size
	}
	var layer int64
	for _, b := range m.LayerBytes {
		layer += b
	}
	got := layer*int64(m.Layers) + m.InputBytes + m.OutputBytes
	// Rounding the per-layer average up adds < 1 byte per type and layer;
	// a tied output counts the embedding twice; rope_freqs are left out.
	if got < tensors-1<<16 || got > tensors+m.InputBytes+int64(len(m.LayerBytes)*m.Layers) {
		t.Errorf("model bytes %d, file tensors %d", got, tensors)
	}
	if m.Layers < 1 || m.Vocab < 1 || m.KVBytesPerToken <= 0 || m.LayerFlops["f16"] <= 0 {
		t.Errorf("shape %+v", m)
	}
	code, out, errs := runPlan(t, "--devices", testbed, "--model", planStories, "--head", "D3")
	if code != 0 || !strings.Contains(out, "D3 (head)") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	code, _, errs = runPlan(t, "--devices", testbed, "--model", filepath.Join(t.TempDir(), "none.gguf"))
	if code != 1 || errs == "" {
		t.Errorf("missing GGUF: exit %d, %q", code, errs)
	}
}

// TestPlanMoE: a MoE model's plan says what a token reads, the hot set and
// where the routing came from (uniform: the file has no histogram).
func TestPlanMoE(t *testing.T) {
	code, out, errs := runPlan(t, "--devices", testbed, "--model", "../testdata/models/qwen3moe-Q8_0.gguf")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	if !strings.Contains(out, "mixture of experts: a token reads") || !strings.Contains(out, "uniform top-2 of 8: no routing histogram") {
		t.Errorf("plan does not describe the experts:\n%s", out)
	}
	// A measured histogram: experts 0 and 1 hot in every layer.
	hist := filepath.Join(t.TempDir(), "routing.json")
	if err := os.WriteFile(hist, []byte(`{"counts": [[30,30,5,5,5,5,5,5],[30,30,5,5,5,5,5,5],[30,30,5,5,5,5,5,5],[30,30,5,5,5,5,5,5]]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runPlan(t, "--devices", testbed, "--model", "../testdata/models/qwen3moe-Q8_0.gguf", "--routing", hist)
	if code != 0 || !strings.Contains(out, "measured: top-2 of 8 over 45 tokens a layer") {
		t.Errorf("exit %d, plan does not use the histogram:\n%s%s", code, out, errs)
	}
	if err := os.WriteFile(hist, []byte(`{"counts": [[1,2]]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs = runPlan(t, "--devices", testbed, "--model", "../testdata/models/qwen3moe-Q8_0.gguf", "--routing", hist); code != 1 || !strings.Contains(errs, "histogram") {
		t.Errorf("a histogram of the wrong shape: exit %d, %q", code, errs)
	}
	code, out, _ = runPlan(t, "--devices", testbed, "--model", planStories)
	if code != 0 || strings.Contains(out, "mixture of experts") {
		t.Errorf("dense model's plan mentions experts (exit %d):\n%s", code, out)
	}
}
