package gpudriver

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/discovery/deviceid"
	"homering/engine/ggml"
	"homering/engine/ring"
	"homering/engine/ring/ggmlengine"
	"homering/engine/ring/wire"
	"homering/internal/testgpu"
)

// llama-F32: 4 layers, n_embd 256, vocab 1000 (build/gen-models.sh). F32,
// because the GPU and CPU kernels then agree to ~1e-4 (engine/gputest
// states the per-type tolerances) and greedy tokens match.
const model = "../../../../testdata/models/llama-F32.gguf"

// relTol bounds max |Δlogit| / max |logit| between the GPU and CPU runs:
// lavapipe measured 7.4e-4 for F32 over 40 prompt tokens (engine/gputest).
const relTol = 2e-3

var prompt = []int32{1, 17, 230, 5, 99, 412}

const steps = 8

// A two-device ring in one process, the head's and the worker's engines
// chained as the driver chains them over links: the head (layers 0-1, its
// first on the GPU) embeds and samples, the worker (layers 2-3) runs both
// its layers on the GPU. Its greedy tokens equal the same plan's on the CPU
// and its logits agree to relTol, yet differ from the CPU's bits: the GPU
// layers really ran on the GPU.
func TestRingWithGPULayers(t *testing.T) {
	testgpu.Load(t)
	m, err := ggml.Open(model)
	if err != nil {
		t.Fatalf("%v: run build/setup.sh (build/gen-models.sh writes the generated models)", err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	info := m.Info()
	plan := func(headGPU, workerGPU int) *wire.Plan {
		return &wire.Plan{ID: 1, K: 1, Layers: info.NLayer, NEmbd: info.NEmbd, DType: wire.F32, Devices: []wire.Device{
			{ID: deviceid.ForName("head"), GPULayers: headGPU, Windows: []wire.Range{{Start: 0, End: 2}}},
			{ID: deviceid.ForName("worker"), GPULayers: workerGPU, Windows: []wire.Range{{Start: 2, End: info.NLayer}}},
		}}
	}
	cpuTok, cpuLogits := run(t, m, plan(0, 0))
	gpuTok, gpuLogits := run(t, m, plan(1, 2))
	if diff := cmp.Diff(cpuTok, gpuTok); diff != "" {
		t.Errorf("greedy tokens (-CPU +GPU layers)\n%s", diff)
	}
	worst, differ := 0.0, false
	for i := range cpuLogits {
		var maxDiff, maxAbs float64
		for j := range cpuLogits[i] {
			maxDiff = max(maxDiff, math.Abs(float64(cpuLogits[i][j]-gpuLogits[i][j])))
			maxAbs = max(maxAbs, math.Abs(float64(cpuLogits[i][j])))
		}
		worst = max(worst, maxDiff/maxAbs)
		differ = differ || maxDiff > 0
	}
	t.Logf("max relative logit difference GPU vs CPU over %d steps: %.2g", len(cpuLogits), worst)
	if worst > relTol {
		t.Errorf("logits differ by %.2g (relative), more than %.0g", worst, relTol)
	}
	if !differ {
		t.Error("logits with GPU layers are bit-identical to the CPU's: the plan's GPU layers did not run on the GPU")
	}
}

// run generates greedily on plan's two devices and returns the tokens and
// the logits of every step.
func run(t *testing.T, m *ggml.Model, plan *wire.Plan) ([]int32, [][]float32) {
	t.Helper()
	var logits [][]float32
	head := &ggmlengine.GGML{M: m, NCtx: 64, Threads: 2, Sample: func(l []float32) int32 {
		logits = append(logits, append([]float32(nil), l...))
		return ggmlengine.Greedy(l)
	}}
	worker := &ggmlengine.GGML{M: m, NCtx: 64, Threads: 2}
	defer head.Close()
	defer worker.Close()
	for i, e := range []*ggmlengine.GGML{head, worker} {
		if err := e.Prepare(plan, i); err != nil {
			t.Fatalf("Prepare device %d with %d GPU layers: %v", i, plan.Devices[i].GPULayers, err)
		}
	}
	var out []int32
	in, pos := prompt, 0
	for seq := range uint64(steps) {
		c := ring.Compute{Seq: seq, Window: plan.Devices[0].Windows[0], Tokens: in, Pos: pos}
		d, err := head.Compute(c)
		if err == nil {
			d, err = worker.Compute(ring.Compute{Seq: seq, Window: plan.Devices[1].Windows[0], Pos: pos, Hidden: d.Hidden})
		}
		if err == nil {
			d, err = head.Compute(ring.Compute{Seq: seq, Pos: pos, Hidden: d.Hidden, Output: true})
		}
		if err != nil {
			t.Fatalf("step %d: %v", seq, err)
		}
		out = append(out, d.Token)
		pos += len(in)
		in = []int32{d.Token}
	}
	return out, logits
}
