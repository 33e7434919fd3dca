package halda_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/halda"
	"homering/halda/haldatest"
	"homering/halda/lpsolve"
)

// Units for hand-solvable problems: a layer of 1 GB and 1 GFLOP; a CPU of
// 100 GFLOP/s reading RAM at 100 GB/s spends 10 + 10 = 20 ms on it (α, A.3).
const (
	gb    = int64(1e9)
	layer = 1e9
)

func handModel(layers int) halda.Model {
	return halda.Model{
		Name: "hand", Layers: layers,
		LayerBytes: map[string]int64{"f16": gb}, LayerFlops: map[string]float64{"f16": layer},
		Vocab: 1,
	}
}

// cpu is a Linux CPU-only device: α = 20 ms per layer.
func cpu(name string, ram int64, disk float64, links map[string]float64) halda.Device {
	return halda.Device{
		Name: name, OS: halda.Linux,
		CPUFlops: map[string]float64{"f16": 100e9}, CPUReadBytesPerSec: 100e9,
		RAMAvailable: ram, DiskSeqBytesPerSec: disk, DiskRandBytesPerSec: disk,
		LinkSec: links,
	}
}

func withOS(d halda.Device, os halda.OS, randRead float64) halda.Device {
	d.OS, d.DiskRandBytesPerSec = os, randRead
	return d
}

func withFault(d halda.Device, fault float64) halda.Device {
	d.DiskFaultBytesPerSec = fault
	return d
}

func withSwap(d halda.Device, canSwap, avail int64) halda.Device {
	d.SwapCanSwap, d.SwapAvailable = canSwap, avail
	return d
}

type row struct {
	Device string
	Case   halda.Case
	W, N   int
}

func rows(p halda.Plan) []row {
	var out []row
	for _, a := range p.Ring {
		out = append(out, row{a.Device, a.Case, a.W, a.N})
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(a), math.Abs(b)) }

// TestHandSolved checks plans worked out on paper, each citing where the
// model comes from.
func TestHandSolved(t *testing.T) {
	ms := 1e-3
	link := func(to string) map[string]float64 { return map[string]float64{to: 1 * ms} }
	strongGPU := halda.Device{
		Name: "gpu", OS: halda.Linux, GPU: halda.CUDA,
		CPUFlops: map[string]float64{"f16": 100e9}, CPUReadBytesPerSec: 100e9,
		GPUFlops: map[string]float64{"f16": 1e12}, GPUReadBytesPerSec: 1e12, // 2 ms per GPU layer
		RAMAvailable: 4 * gb, VRAMAvailable: 16 * gb,
		DiskSeqBytesPerSec: 2e9, DiskRandBytesPerSec: 2e9,
		LinkSec: map[string]float64{"weak": 5 * ms},
	}
	metal := halda.Device{
		Name: "mac", OS: halda.MacOS, GPU: halda.Metal, UMA: true,
		CPUFlops: map[string]float64{"f16": 100e9}, CPUReadBytesPerSec: 100e9,
		GPUFlops: map[string]float64{"f16": 1e12}, GPUReadBytesPerSec: 1e12,
		RAMAvailable: 8 * gb, MetalBudget: 6 * gb,
		DiskSeqBytesPerSec: 2e9, DiskRandBytesPerSec: 1e9,
	}
	tests := []struct {
		name     string
		cite     string
		p        halda.Problem
		wantK    int
		want     []row
		wantMs   float64
		wantDisk float64
		dropped  []string
	}{{
		name: "two equal CPUs, room for 4 layers each, slow disks",
		cite: "000 §3.2 eqs. 12, 14, 19 and row (32): no paging below s_threshold, so 4+4; k=1 pays the 1 ms links once per round",
		p: halda.Problem{Model: handModel(8), Devices: []halda.Device{
			cpu("a", 4*gb+gb/2, 50e6, link("b")), cpu("b", 4*gb+gb/2, 50e6, link("a"))}},
		wantK:  1,
		want:   []row{{"a", halda.M4, 4, 0}, {"b", halda.M4, 4, 0}},
		wantMs: 8*20 + 2, // 8 layers × α + one round of two 1 ms links
	}, {
		name: "device short of RAM pages in case M3",
		cite: "000 A.3 Case 3 and eq. (15): 4 layers of 1 GB in 3.5 GB re-read 0.5 GB per token at 1 GB/s; a window must fit (A.1), so k=1 (4 layers) is out and k=2 is the first fit",
		p: halda.Problem{Model: handModel(4), Devices: []halda.Device{
			cpu("a", 3*gb+gb/2, 1e9, nil)}},
		wantK:    2,
		want:     []row{{"a", halda.M3, 2, 0}},
		wantMs:   4*20 + 500,
		wantDisk: 500,
	}, {
		name: "a measured page-fault throughput replaces the direct-read one",
		cite: "package doc, Disk: 0.5 GB over re-read through page faults at 0.25 GB/s (the 1 GB/s O_DIRECT figure is not used)",
		p: halda.Problem{Model: handModel(4), Devices: []halda.Device{
			withFault(cpu("a", 3*gb+gb/2, 1e9, nil), 0.25e9)}},
		wantK:    2,
		want:     []row{{"a", halda.M3, 2, 0}},
		wantMs:   4*20 + 2000,
		wantDisk: 2000,
	}, {
		name: "a page-fault throughput on macOS replaces the random-read one too",
		cite: "package doc, Disk: the fault sweep holds the OS's own clustering; 0.5 GB at 2 GB/s instead of 0.5 GB/s random",
		p: halda.Problem{Model: handModel(4), Devices: []halda.Device{
			withFault(withOS(cpu("mac", 3*gb+gb/2, 4e9, nil), halda.MacOS, 0.5e9), 2e9)}},
		wantK:    2,
		want:     []row{{"mac", halda.M1, 2, 0}},
		wantMs:   4*20 + 250,
		wantDisk: 250,
	}, {
		name: "macOS without Metal short of RAM pages in case M1 at random-read speed",
		cite: "000 A.3 Case 1 and eq. (15) with random reads: 0.5 GB over at 0.5 GB/s random (the 4 GB/s sequential figure is not used)",
		p: halda.Problem{Model: handModel(4), Devices: []halda.Device{
			withOS(cpu("mac", 3*gb+gb/2, 4e9, nil), halda.MacOS, 0.5e9)}},
		wantK:    2,
		want:     []row{{"mac", halda.M1, 2, 0}},
		wantMs:   4*20 + 1000,
		wantDisk: 1000,
	}, {
		name: "Windows short of RAM pages in case M5 at random-read speed",
		cite: "package doc, Windows: gradual reclaim as eq. (15), no sequential read-ahead: 0.5 GB at 1 GB/s random",
		p: halda.Problem{Model: handModel(4), Devices: []halda.Device{
			withOS(cpu("win", 3*gb+gb/2, 4e9, nil), halda.Windows, 1e9)}},
		wantK:    2,
		want:     []row{{"win", halda.M5, 2, 0}},
		wantMs:   4*20 + 500,
		wantDisk: 500,
	}, {
		name: "Android's swap-out makes room: no paging",
		cite: "000 A.3 eq. (17): d^swapout = min(bytes_can_swap, swap_avail) = 0.5 GB lifts 3.5 GB to 4 GB, enough for 4 layers",
		p: halda.Problem{Model: handModel(4), Devices: []halda.Device{
			withSwap(withOS(cpu("phone", 3*gb+gb/2, 1e9, nil), halda.Android, 1e9), gb/2, gb)}},
		wantK:  1,
		want:   []row{{"phone", halda.M4, 4, 0}},
		wantMs: 4 * 20,
	}, {
		name:   "Metal device under its working-set budget",
		cite:   "000 A.3 Case 4 with row (31) and the Metal row (35): 4 GB fit in the 6 GB budget, every layer on the GPU at 2 ms",
		p:      halda.Problem{Model: handModel(4), Devices: []halda.Device{metal}},
		wantK:  1,
		want:   []row{{"mac", halda.M4, 4, 4}},
		wantMs: 4 * 2,
	}, {
		name: "one-layer device dropped and the plan re-solved",
		cite: "001 §3.3 device selection: the weak CPU gets w=1 only because w ≥ 1 (eq. 7); without it the 5 ms links vanish",
		p: halda.Problem{Model: handModel(8), Devices: []halda.Device{strongGPU,
			cpu("weak", 8*gb, 1e9, map[string]float64{"gpu": 5 * ms})}},
		wantK:   1,
		want:    []row{{"gpu", halda.M4, 8, 8}},
		wantMs:  8 * 2,
		dropped: []string{"weak"},
	}, {
		name: "k > 1 when the model exceeds the cluster's memory",
		cite: "001 §3.1 and A.14.2: 8 GB on two 2.5 GB devices; one window must fit, so k=2 (windows of 2), each device re-reading 1.5 GB per token at 2 GB/s",
		p: halda.Problem{Model: handModel(8), Devices: []halda.Device{
			cpu("a", 2*gb+gb/2, 2e9, link("b")), cpu("b", 2*gb+gb/2, 2e9, link("a"))}},
		wantK:    2,
		want:     []row{{"a", halda.M3, 2, 0}, {"b", halda.M3, 2, 0}},
		wantMs:   8*20 + 2*750 + 2*2,
		wantDisk: 1500,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := halda.Solve(tt.p, lpsolve.Solver{})
			if err != nil {
				t.Fatalf("%s: %v", tt.cite, err)
			}
			if pl.K != tt.wantK {
				t.Errorf("k = %d, want %d (%s)", pl.K, tt.wantK, tt.cite)
			}
			if diff := cmp.Diff(tt.want, rows(pl)); diff != "" {
				t.Errorf("ring (-want +got):\n%s\n%s", diff, tt.cite)
			}
			if !near(pl.PredictedMs, tt.wantMs) || !near(pl.DiskMs, tt.wantDisk) {
				t.Errorf("predicted %.6f ms (disk %.6f), want %.6f (disk %.6f): %s", pl.PredictedMs, pl.DiskMs, tt.wantMs, tt.wantDisk, tt.cite)
			}
			var dropped []string
			for _, d := range pl.Dropped {
				dropped = append(dropped, d.Device)
			}
			if diff := cmp.Diff(tt.dropped, dropped); diff != "" {
				t.Errorf("dropped (-want +got):\n%s", diff)
			}
			checkLayers(t, tt.p.Model.Layers, pl)
			checkBaselines(t, tt.p, pl)
		})
	}
}

// TestGPUHeadroom: the paper's calibration step (001 §3.3, Algorithm 1
// lines 13-15). The memory-proportional start gives the 3.5 GB CPU device
// most layers and puts both devices in M3, so the ILP keeps CPU layers on
// the GPU device; with VRAM free and devices paging, the loop forces the
// slowest-disk pager (cpu, 1 GB/s) into M4, then the GPU device, whose GPU
// then takes the model.
func TestGPUHeadroom(t *testing.T) {
	gpu := halda.Device{
		Name: "gpu", OS: halda.Linux, GPU: halda.CUDA,
		CPUFlops: map[string]float64{"f16": 100e9}, CPUReadBytesPerSec: 100e9,
		GPUFlops: map[string]float64{"f16": 1e12}, GPUReadBytesPerSec: 1e12,
		RAMAvailable: 2 * gb, VRAMAvailable: 16 * gb,
		DiskSeqBytesPerSec: 3e9, DiskRandBytesPerSec: 3e9,
		LinkSec: map[string]float64{"cpu": 1e-3},
	}
	p := halda.Problem{Model: handModel(8), Devices: []halda.Device{gpu,
		cpu("cpu", 3*gb+gb/2, 1e9, map[string]float64{"gpu": 1e-3})}}
	forced, pl, err := halda.PaperLoopForTest(p, lpsolve.Solver{})
	if err != nil {
		t.Fatal(err)
	}
	if len(forced) == 0 || forced[0] != "cpu" {
		t.Errorf("forced %v, want the slow-disk cpu first", forced)
	}
	want := []row{{"gpu", halda.M4, 7, 7}, {"cpu", halda.M4, 1, 0}}
	if diff := cmp.Diff(want, rows(pl)); diff != "" {
		t.Errorf("plan after calibration (-want +got):\n%s", diff)
	}
	full, err := halda.Solve(p, lpsolve.Solver{})
	if err != nil {
		t.Fatal(err)
	}
	if full.PredictedMs > pl.PredictedMs {
		t.Errorf("Solve predicts %.3f ms, worse than the paper's loop alone (%.3f)", full.PredictedMs, pl.PredictedMs)
	}
}

// checkLayers: the rounds cover layers 0..L-1 exactly once, in ring order.
func checkLayers(t *testing.T, L int, pl halda.Plan) {
	t.Helper()
	seen := make([]int, L)
	for _, a := range pl.Ring {
		if len(a.Layers) != pl.K && a.W > 0 {
			t.Errorf("%s has %d ranges for k=%d", a.Device, len(a.Layers), pl.K)
		}
		for _, r := range a.Layers {
			if r.End-r.Start != a.W {
				t.Errorf("%s range %v is not w=%d long", a.Device, r, a.W)
			}
			for l := r.Start; l < r.End; l++ {
				seen[l]++
			}
		}
	}
	for l, c := range seen {
		if c != 1 {
			t.Fatalf("layer %d held %d times", l, c)
		}
	}
}

// checkBaselines: Halda's prediction is never worse than MemSched's or
// PerfSched's (001 A.10), scored by the same model.
func checkBaselines(t *testing.T, p halda.Problem, pl halda.Plan) {
	t.Helper()
	// The search's optimum is never worse than either baseline; the plan
	// Solve returns is it balanced, at most BalanceSlack above it and
	// never below: balancing keeps k and every device's case (thrashing
	// or not), so its points lie in the ILP the optimum solved, and one
	// below would be a point the search missed.
	opt, err := halda.SolveOptimum(p, lpsolve.Solver{})
	if err != nil {
		t.Fatal(err)
	}
	if pl.PredictedMs > opt.PredictedMs*(1+halda.BalanceSlack)*(1+1e-12) {
		t.Errorf("Solve predicts %.3f ms against the search's optimum of %.3f ms: balancing may cost up to %.0f%%", pl.PredictedMs, opt.PredictedMs, 100*halda.BalanceSlack)
	}
	if pl.PredictedMs < opt.PredictedMs*(1-1e-9) {
		t.Errorf("the balanced plan predicts %.3f ms, below the search's optimum of %.3f ms (k=%d): optimum %v, balanced %v", pl.PredictedMs, opt.PredictedMs, opt.K, rows(opt), rows(pl))
	}
	pl = opt
	for name, f := range map[string]func(halda.Problem) (halda.Plan, error){"MemSched": halda.MemSched, "PerfSched": halda.PerfSched} {
		b, err := f(p)
		if errors.Is(err, halda.ErrOutOfMemory) {
			continue // the baseline crashes a device; Halda's plan fits
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if pl.PredictedMs > b.PredictedMs*(1+1e-9) {
			t.Errorf("Halda predicts %.3f ms, worse than %s's %.3f ms", pl.PredictedMs, name, b.PredictedMs)
		}
	}
}

// crossSolver hands every ILP to lp_solve and to enumeration and records
// whether they agree.
type crossSolver struct {
	t                   *testing.T
	checked, infeasible int
	worst               float64
}

func (c *crossSolver) SolveLayers(p halda.LayerILP) (halda.LayerSolution, error) {
	got, err1 := lpsolve.Solver{}.SolveLayers(p)
	want, err2 := haldatest.Exhaustive{}.SolveLayers(p)
	for _, s := range []halda.Solver{haldatest.DP{}, haldatest.Greedy{}} {
		if alt, err := s.SolveLayers(p); (err == nil) != (err2 == nil) || (err == nil && (math.Abs(alt.Objective-want.Objective) > 1e-9 || !p.Feasible(alt.W, alt.N))) {
			c.t.Fatalf("%T says %v (%v), enumeration %v (%v)", s, alt.Objective, err, want.Objective, err2)
		}
	}
	if errors.Is(err1, halda.ErrILPInfeasible) != errors.Is(err2, halda.ErrILPInfeasible) || (err1 == nil) != (err2 == nil) {
		c.t.Fatalf("lp_solve says %v, enumeration says %v for %+v", err1, err2, p)
	}
	if err2 != nil {
		c.infeasible++
		return got, err1
	}
	c.checked++
	gap := math.Abs(got.Objective - want.Objective)
	c.worst = max(c.worst, gap)
	if gap > 1e-9 || !p.Feasible(got.W, got.N) {
		c.t.Fatalf("lp_solve optimum %.15g at w=%v n=%v, enumeration %.15g at w=%v n=%v, for %+v",
			got.Objective, got.W, got.N, want.Objective, want.W, want.N, p)
	}
	return got, nil
}

// TestLPSolveMatchesEnumeration: on 500 random problems (≤ 4 devices, ≤ 16
// layers, fixed seed), every ILP Halda builds has the same optimum under
// lp_solve and under exhaustive enumeration (within 1e-9 s), the full
// solves agree, the case form equals the full model at the ILPs' optima,
// and Halda is never worse than either baseline.
func TestLPSolveMatchesEnumeration(t *testing.T) {
	r := rand.New(rand.NewPCG(2026, 4))
	cs := &crossSolver{t: t}
	var plans, infeasible, consistency int
	var worstGap float64
	for i := range 500 {
		p := haldatest.RandomProblem(r, 4, 16)
		pl, err := halda.Solve(p, cs)
		pe, erre := halda.Solve(p, haldatest.Exhaustive{})
		if (err == nil) != (erre == nil) {
			t.Fatalf("problem %d: lp_solve run says %v, enumeration run says %v", i, err, erre)
		}
		if err != nil {
			if !errors.Is(err, halda.ErrNoFeasiblePlan) {
				t.Fatalf("problem %d: %v", i, err)
			}
			infeasible++
			continue
		}
		plans++
		if !near(pl.PredictedMs, pe.PredictedMs) {
			t.Errorf("problem %d: lp_solve plan %.12f ms, enumeration plan %.12f ms", i, pl.PredictedMs, pe.PredictedMs)
		}
		checkLayers(t, p.Model.Layers, pl)
		checkBaselines(t, p, pl)
		n, gap, err := halda.CheckConsistency(p, haldatest.Exhaustive{})
		if err != nil {
			t.Fatal(err)
		}
		consistency += n
		worstGap = max(worstGap, gap)
	}
	if worstGap > 1e-9 {
		t.Errorf("case form and full model differ by up to %.3g (relative)", worstGap)
	}
	if cs.checked < 1000 {
		t.Errorf("only %d feasible ILPs compared; the generator has drifted", cs.checked)
	}
	t.Logf("500 problems: %d plans, %d infeasible; %d ILPs compared (worst gap %.3g s), %d both infeasible; %d case-form points consistent (worst %.3g)",
		plans, infeasible, cs.checked, cs.worst, cs.infeasible, consistency, worstGap)
}

// pairSolver answers with lp_solve and checks every answer against the
// exact greedy solver, for problems too large to enumerate.
type pairSolver struct {
	t       *testing.T
	checked int
}

func (c *pairSolver) SolveLayers(p halda.LayerILP) (halda.LayerSolution, error) {
	got, err1 := lpsolve.Solver{}.SolveLayers(p)
	want, err2 := haldatest.Greedy{}.SolveLayers(p)
	if (err1 == nil) != (err2 == nil) {
		c.t.Fatalf("lp_solve says %v, greedy says %v, for %+v", err1, err2, p)
	}
	if err1 == nil {
		c.checked++
		if math.Abs(got.Objective-want.Objective) > 1e-9*max(1, math.Abs(want.Objective)) || !p.Feasible(got.W, got.N) {
			c.t.Fatalf("lp_solve optimum %.15g, greedy %.15g, for %+v", got.Objective, want.Objective, p)
		}
	}
	return got, err1
}

// TestLPSolveMatchesGreedyOnClusters: on 40 random clusters of 5-40
// devices and an 80-layer model, every ILP's lp_solve optimum equals the
// exact greedy solver's (within 1e-9 relative), and Halda beats both
// baselines.
func TestLPSolveMatchesGreedyOnClusters(t *testing.T) {
	m, err := haldatest.Model("llama3-70b-q4k.json")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(80, 40))
	c := &pairSolver{t: t}
	for i := range 40 {
		n := 5 + r.IntN(36)
		p := halda.Problem{Devices: haldatest.Cluster(r, n, 80*512e6*(0.5+r.Float64())), Model: m}
		pl, err := halda.Solve(p, c)
		if err != nil {
			if errors.Is(err, halda.ErrNoFeasiblePlan) {
				continue
			}
			t.Fatalf("cluster %d: %v", i, err)
		}
		checkLayers(t, 80, pl)
		checkBaselines(t, p, pl)
	}
	if c.checked < 200 {
		t.Errorf("only %d ILPs compared", c.checked)
	}
	t.Logf("%d ILPs compared", c.checked)
}

func testbed(t *testing.T, devices, model, head string) halda.Problem {
	t.Helper()
	ds, err := haldatest.Devices(devices)
	if err != nil {
		t.Fatal(err)
	}
	m, err := haldatest.Model(model)
	if err != nil {
		t.Fatal(err)
	}
	return halda.Problem{Devices: haldatest.Head(ds, head), Model: m}
}

// TestPaperTestbeds: the papers' clusters give the papers' qualitative
// results (device tables 000 Table 2 / 001 Table 3 and 001 Table 11; FLOPS
// are estimates, see testdata/README.md).
func TestPaperTestbeds(t *testing.T) {
	t.Run("70B Q4_K on D1-D4 pipelines in k>1 rounds within memory", func(t *testing.T) {
		// 001 §4.1: 37 GiB of RAM+VRAM for a 40 GiB model; PRP with k ≥ 2.
		p := testbed(t, "devices.json", "llama3-70b-q4k.json", "D1")
		pl, err := halda.Solve(p, lpsolve.Solver{})
		if err != nil {
			t.Fatal(err)
		}
		if pl.K < 2 {
			t.Errorf("k = %d, want > 1", pl.K)
		}
		byName := map[string]halda.Device{}
		for _, d := range p.Devices {
			byName[d.Name] = d
		}
		for _, a := range pl.Ring {
			d := byName[a.Device]
			limit := d.RAMAvailable
			if d.GPU == halda.Metal {
				limit = min(d.MetalBudget, d.RAMAvailable)
			}
			if a.ResidentBytes > limit {
				t.Errorf("%s keeps %d bytes resident, more than its %d", a.Device, a.ResidentBytes, limit)
			}
			if a.VRAMBytes > d.VRAMAvailable && d.GPU == halda.CUDA {
				t.Errorf("%s pins %d bytes of VRAM, more than its %d", a.Device, a.VRAMBytes, d.VRAMAvailable)
			}
		}
		// Every GPU of the testbed gets layers (the paper's Table 3 puts
		// layers on D1's Metal and on D2's and D3's CUDA cards): a plan that
		// leaves a GPU idle while its device pages weights is a regression.
		for _, a := range pl.Ring {
			if d := byName[a.Device]; d.GPU != halda.NoGPU && a.N == 0 {
				t.Errorf("%s has a %s GPU and %d layers a round, none on the GPU", a.Device, d.GPU, a.W)
			}
		}
		checkLayers(t, 80, pl)
		checkBaselines(t, p, pl)
		t.Logf("k=%d %v predicted %.0f ms (disk %.0f)", pl.K, rows(pl), pl.PredictedMs, pl.DiskMs)
	})
	t.Run("10-device pool drops the weakest", func(t *testing.T) {
		// 001 A.19.2: the CPU-only D1, D3, D8 are dropped; a few GPU
		// devices remain.
		p := testbed(t, "pool10.json", "llama3-70b-q4k.json", "D2")
		pl, err := halda.Solve(p, lpsolve.Solver{})
		if err != nil {
			t.Fatal(err)
		}
		var dropped []string
		for _, d := range pl.Dropped {
			dropped = append(dropped, d.Device)
		}
		for _, weak := range []string{"D1", "D3", "D8"} {
			if !slices.Contains(dropped, weak) {
				t.Errorf("%s kept; dropped %v", weak, dropped)
			}
		}
		if len(pl.Ring) > 5 {
			t.Errorf("ring of %d devices, want the few strong GPUs", len(pl.Ring))
		}
		checkBaselines(t, p, pl)
		t.Logf("ring %v dropped %v predicted %.0f ms", rows(pl), dropped, pl.PredictedMs)
	})
	t.Run("8B collapses onto the 2080Ti desktop", func(t *testing.T) {
		// 001 §4.1: "Halda finds that D3 can hold the entire model in
		// VRAM, so it removes the other devices".
		p := testbed(t, "devices.json", "llama3-8b-q4k.json", "D3")
		pl, err := halda.Solve(p, lpsolve.Solver{})
		if err != nil {
			t.Fatal(err)
		}
		want := []row{{"D3", halda.M4, 32, 32}}
		if diff := cmp.Diff(want, rows(pl)); diff != "" {
			t.Errorf("ring (-want +got):\n%s", diff)
		}
		checkBaselines(t, p, pl)
	})
	t.Run("8B with the Mac as head: all layers on D3, the head only embeds and samples", func(t *testing.T) {
		p := testbed(t, "devices.json", "llama3-8b-q4k.json", "D1")
		pl, err := halda.Solve(p, lpsolve.Solver{})
		if err != nil {
			t.Fatal(err)
		}
		want := []row{{"D1", halda.M4, 0, 0}, {"D3", halda.M4, 32, 32}}
		if diff := cmp.Diff(want, rows(pl)); diff != "" {
			t.Errorf("ring (-want +got):\n%s", diff)
		}
		checkBaselines(t, p, pl)
	})
}

// TestRingOrder: the order minimises the links charged per round (eq. 19),
// exhaustively for small rings and by nearest neighbour + 2-opt beyond.
func TestRingOrder(t *testing.T) {
	// Devices on a line at positions 0..n-1 in shuffled order; the link time
	// is the distance, so the best cycle goes out and back: 2(n-1) ms.
	for _, n := range []int{5, 7, 12} {
		t.Run(strings.Repeat("d", 1)+string(rune('0'+n%10)), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(n), 1))
			pos := r.Perm(n)
			var ds []halda.Device
			for i := range n {
				ds = append(ds, cpu(string(rune('a'+i)), 100*gb, 1e9, map[string]float64{}))
			}
			for i := range ds {
				for j := range ds {
					if i != j {
						ds[i].LinkSec[ds[j].Name] = math.Abs(float64(pos[i]-pos[j])) * 1e-3
					}
				}
			}
			p := halda.Problem{Model: handModel(3 * n), Devices: ds, KeepAllDevices: true}
			pl, err := halda.Solve(p, lpsolve.Solver{})
			if err != nil {
				t.Fatal(err)
			}
			if pl.Ring[0].Device != "a" {
				t.Errorf("head is %s, want a", pl.Ring[0].Device)
			}
			if want := float64(pl.K) * 2 * float64(n-1); !near(pl.NetworkMs, want) {
				t.Errorf("network %.3f ms, want %.3f (k=%d, shortest cycle %d ms)", pl.NetworkMs, want, pl.K, 2*(n-1))
			}
		})
	}
}

// TestInfeasible: no plan is a typed error with bytes a person can compare.
func TestInfeasible(t *testing.T) {
	slow := halda.Problem{Model: handModel(8), Devices: []halda.Device{
		cpu("a", 2*gb, 50e6, map[string]float64{"b": 1e-3}), cpu("b", 2*gb, 50e6, map[string]float64{"a": 1e-3})}}
	kv := halda.Problem{Model: handModel(8), Devices: []halda.Device{cpu("a", 100*gb, 1e9, nil)}}
	kv.Model.KVBytesPerToken, kv.Model.ContextTokens = 1<<20, 32768 // 32 GiB per layer
	tests := []struct {
		name   string
		p      halda.Problem
		reason string
		words  string
	}{
		{"model larger than memory, disks too slow to page", slow, halda.ReasonNoFastDisk, "none has a disk fast enough"},
		{"KV cache larger than memory", kv, halda.ReasonKVCache, "KV cache for 32768 tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := halda.Solve(tt.p, lpsolve.Solver{})
			var e *halda.NoFeasiblePlanError
			if !errors.As(err, &e) || !errors.Is(err, halda.ErrNoFeasiblePlan) {
				t.Fatalf("err = %v, want a NoFeasiblePlanError", err)
			}
			if e.Reason != tt.reason || e.NeedBytes <= e.HaveBytes {
				t.Errorf("reason %q need %d have %d, want %q with need > have", e.Reason, e.NeedBytes, e.HaveBytes, tt.reason)
			}
			if !strings.Contains(err.Error(), tt.words) || !strings.Contains(err.Error(), "GiB") {
				t.Errorf("message %q lacks %q", err, tt.words)
			}
		})
	}
}

// TestValidation: bad input is a typed error naming the field, never a panic.
func TestValidation(t *testing.T) {
	good := func() halda.Problem {
		return halda.Problem{Model: handModel(4), Devices: []halda.Device{cpu("a", 8*gb, 1e9, map[string]float64{"b": 1e-3}), cpu("b", 8*gb, 1e9, map[string]float64{"a": 1e-3})}}
	}
	tests := []struct {
		name  string
		edit  func(*halda.Problem)
		field string
	}{
		{"no devices", func(p *halda.Problem) { p.Devices = nil }, "devices"},
		{"no layers", func(p *halda.Problem) { p.Model.Layers = 0 }, "model.layers"},
		{"zero vocab", func(p *halda.Problem) { p.Model.Vocab = 0 }, "model.vocab"},
		{"duplicate name", func(p *halda.Problem) { p.Devices[1].Name = "a" }, "devices[1].name"},
		{"unknown OS", func(p *halda.Problem) { p.Devices[0].OS = "beos" }, `devices["a"].os`},
		{"metal on linux", func(p *halda.Problem) { p.Devices[0].GPU = halda.Metal }, `devices["a"].gpu`},
		{"no CPU flops", func(p *halda.Problem) { p.Devices[0].CPUFlops = nil }, `devices["a"].cpu_flops`},
		{"no disk", func(p *halda.Problem) { p.Devices[0].DiskSeqBytesPerSec = 0 }, `devices["a"].disk_*_read_bytes_per_s`},
		{"negative fault throughput", func(p *halda.Problem) { p.Devices[0].DiskFaultBytesPerSec = -1 }, `devices["a"].disk_fault_read_bytes_per_s`},
		{"NaN fault throughput", func(p *halda.Problem) { p.Devices[0].DiskFaultBytesPerSec = math.NaN() }, `devices["a"].disk_fault_read_bytes_per_s`},
		{"missing link", func(p *halda.Problem) { p.Devices[0].LinkSec = nil }, `devices["a"].link_s`},
		{"negative RAM", func(p *halda.Problem) { p.Devices[1].RAMAvailable = -1 }, `devices["b"]`},
		{"cuda without GPU profile", func(p *halda.Problem) { p.Devices[1].GPU = halda.CUDA }, `devices["b"].gpu_flops`},
		{"negative rounds", func(p *halda.Problem) { p.Rounds = -1 }, "rounds"},
		{"rounds not dividing the layers", func(p *halda.Problem) { p.Rounds = 3 }, "rounds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := good()
			tt.edit(&p)
			_, err := halda.Solve(p, lpsolve.Solver{})
			var v *halda.ValidationError
			if !errors.As(err, &v) || !errors.Is(err, halda.ErrInvalidProblem) {
				t.Fatalf("err = %v, want a ValidationError", err)
			}
			if v.Field != tt.field {
				t.Errorf("field %q, want %q (%v)", v.Field, tt.field, err)
			}
		})
	}
	if _, err := halda.Solve(good(), nil); !errors.Is(err, halda.ErrNoSolver) {
		t.Errorf("nil solver: %v", err)
	}
	p := good()
	p.Devices[0].LinkSec, p.DefaultLinkSec = nil, 2e-3
	if _, err := halda.Solve(p, lpsolve.Solver{}); err != nil {
		t.Errorf("default link time: %v", err)
	}
}

// TestForcedRing: the options a caller uses to force a ring (tests, the
// bench) keep every device, give the head a window of its own in every
// round and fix k, even where Halda alone would run the head by itself.
func TestForcedRing(t *testing.T) {
	// A small model that fits the head: Halda alone keeps it there.
	links := func(self string) map[string]float64 {
		m := map[string]float64{}
		for _, o := range []string{"a", "b", "c"} {
			if o != self {
				m[o] = 5e-3
			}
		}
		return m
	}
	devs := []halda.Device{cpu("a", 100*gb, 1e9, links("a")), cpu("b", 100*gb, 1e9, links("b")), cpu("c", 100*gb, 1e9, links("c"))}
	type shape struct {
		K       int
		Devices []string
		MinW    int // the smallest window in the ring
	}
	tests := []struct {
		name string
		edit func(*halda.Problem)
		want shape
	}{
		{"halda alone: the head runs everything", func(*halda.Problem) {}, shape{K: 1, Devices: []string{"a"}, MinW: 6}},
		// Equal devices: balanced 2, 2, 2 (package doc, "Balance").
		{"keep all, head holds layers", func(p *halda.Problem) { p.KeepAllDevices, p.HeadHoldsLayers = true, true }, shape{K: 1, Devices: []string{"a", "b", "c"}, MinW: 2}},
		{"keep all, head holds layers, k=2", func(p *halda.Problem) { p.KeepAllDevices, p.HeadHoldsLayers, p.Rounds = true, true, 2 }, shape{K: 2, Devices: []string{"a", "b", "c"}, MinW: 1}},
		{"k fixed alone", func(p *halda.Problem) { p.Rounds = 3 }, shape{K: 3, Devices: []string{"a"}, MinW: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := halda.Problem{Model: handModel(6), Devices: slices.Clone(devs)}
			tt.edit(&p)
			pl, err := halda.Solve(p, lpsolve.Solver{})
			if err != nil {
				t.Fatal(err)
			}
			got := shape{K: pl.K, MinW: math.MaxInt}
			for _, a := range pl.Ring {
				got.Devices = append(got.Devices, a.Device)
				got.MinW = min(got.MinW, a.W)
				if len(a.Layers) != pl.K && a.W > 0 {
					t.Errorf("%s has %d windows for k=%d", a.Device, len(a.Layers), pl.K)
				}
			}
			slices.Sort(got.Devices[1:])
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
	// A window too small for a window per device with the head holding one.
	p := halda.Problem{Model: handModel(4), Devices: slices.Clone(devs), KeepAllDevices: true, HeadHoldsLayers: true, Rounds: 2}
	if _, err := halda.Solve(p, lpsolve.Solver{}); !errors.Is(err, halda.ErrNoFeasiblePlan) {
		t.Errorf("3 devices, 2 layers per round, head holding layers: err = %v, want ErrNoFeasiblePlan", err)
	}
}
