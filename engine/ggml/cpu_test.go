package ggml

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"homering/engine/modelgen"
)

// The CPU variants' tests: each variant library this CPU can run, in a
// child process of its own (the CPU backend is chosen once per process),
// against the built-in backend of this test binary.
const (
	cpuChildLib    = "HOMERING_GGML_CPU_CHILD_LIB"    // the variant library the child uses
	cpuChildModels = "HOMERING_GGML_CPU_CHILD_MODELS" // the models, comma-separated
	cpuChildOut    = "HOMERING_GGML_CPU_CHILD_OUT"    // where it writes its cpuRun (JSON)
)

// cpuRun is what one process computed on one CPU backend.
type cpuRun struct {
	Variant string
	AVX2    bool
	Mapped  []string // the libggml-cpu-*.so files mapped into the process
	Models  []cpuModelRun
}

type cpuModelRun struct {
	Path   string
	Tokens []int32    // greedy continuation of the prompt
	Logits [][]uint32 // the bits of every step's logits
	// Products is how many matrix products of a 17-token batch ran on
	// gemm.c's kernels (the best variant), AttnProducts how many attention
	// products of a decode step at 71 ran on attn.c's; GemmDiffer how many
	// of the batch's logits and those of the steps after it (a decode step,
	// a 53-token batch, a decode step over 96 cells), on each variant of
	// our kernels this CPU runs, differ from the same on ggml's kernels alone.
	Products, AttnProducts, GemmDiffer int
}

// cpuCompute runs every model on the CPU backend in use: a 32-token
// prompt, 16 greedy decode steps (2 threads, so the thread pool is the
// backend's too), and one 17-token batch on both matrix kernels.
func cpuCompute(models []string) (cpuRun, error) {
	r := cpuRun{Variant: CPUVariant(), AVX2: CPUHasAVX2(), Mapped: mappedCPULibs()}
	for _, path := range models {
		mr, err := cpuComputeModel(path)
		if err != nil {
			return r, fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		r.Models = append(r.Models, mr)
	}
	return r, nil
}

func cpuComputeModel(path string) (cpuModelRun, error) {
	mr := cpuModelRun{Path: path}
	m, err := Open(path)
	if err != nil {
		return mr, err
	}
	defer m.Close()
	info := m.Info()
	p := WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, NCtx: testNCtx, Threads: 2}
	w, err := m.NewWindow(p)
	if err != nil {
		return mr, err
	}
	defer w.Close()
	bits := func(v []float32) []uint32 {
		b := make([]uint32, len(v))
		for i, f := range v {
			b[i] = math.Float32bits(f)
		}
		return b
	}
	toks := prompt(info.NVocab)
	lg, err := w.EvalTokens(toks, 0)
	if err != nil {
		return mr, err
	}
	mr.Logits = append(mr.Logits, bits(lg))
	for pos := len(toks); pos < len(toks)+decodeLen; pos++ {
		tok := argmax(lg)
		mr.Tokens = append(mr.Tokens, tok)
		if lg, err = w.EvalTokens([]int32{tok}, pos); err != nil {
			return mr, err
		}
		mr.Logits = append(mr.Logits, bits(lg))
	}
	batch := make([]int32, 17)
	for i := range batch {
		batch[i] = int32((i*37 + 5) % info.NVocab)
	}
	p.AllLogits = true
	// Every variant of our kernels this CPU runs under the backend, then
	// ggml's alone: each must give ggml's bits.
	var kinds []string
	for _, v := range KernelVariants() {
		if v != KernelsGGML {
			kinds = append(kinds, v)
		}
	}
	kinds = append(kinds, KernelsGGML)
	out := make([][]float32, len(kinds))
	for i, k := range kinds {
		p.Kernels = k
		bw, err := m.NewWindow(p)
		if err != nil {
			return mr, err
		}
		out[i], err = bw.EvalTokens(batch, 0)
		if i == 0 {
			mr.Products = bw.promptKernelProducts()
		}
		// A decode step on the token kernels, then past 64 cells (an
		// AVX-512 backend's F16 dot products step by 64).
		for _, s := range [][2]int{{1, len(batch)}, {53, len(batch) + 1}, {1, len(batch) + 54}} {
			if err != nil {
				break
			}
			toks := make([]int32, s[0])
			for j := range toks {
				toks[j] = int32((s[1] + j) * 29 % info.NVocab)
			}
			var step []float32
			step, err = bw.EvalTokens(toks, s[1])
			out[i] = append(out[i], step...)
		}
		if i == len(kinds)-2 {
			mr.AttnProducts = bw.attnKernelProducts()
		}
		if cerr := bw.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return mr, err
		}
	}
	ggml := out[len(out)-1]
	for _, o := range out[:len(out)-1] {
		for i := range o {
			if math.Float32bits(o[i]) != math.Float32bits(ggml[i]) {
				mr.GemmDiffer++
			}
		}
	}
	return mr, nil
}

// mappedCPULibs lists the CPU variant libraries in this process's memory
// map: which code is really there to run.
func mappedCPULibs() []string {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil
	}
	defer f.Close()
	seen := map[string]bool{}
	var libs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 {
			continue
		}
		if b := filepath.Base(fs[5]); strings.HasPrefix(b, "libggml-cpu-") && !seen[b] {
			seen[b] = true
			libs = append(libs, b)
		}
	}
	return libs
}

// cpuChild is a variant child's whole work (TestMain calls it).
func cpuChild(lib string) error {
	variant := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(lib), "libggml-cpu-"), ".so")
	if err := UseCPU(lib, variant); err != nil {
		return err
	}
	r, err := cpuCompute(strings.Split(os.Getenv(cpuChildModels), ","))
	if err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(os.Getenv(cpuChildOut), b, 0o644)
}

// cpuLibDir is the directory of the CPU variant libraries: build/test.sh
// names it in HOMERING_CPU_LIB_DIR; without it, build/gpu-lib.sh cpu
// prints it (building them once, ~1-2 minutes, when its cache has none).
func cpuLibDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("HOMERING_CPU_LIB_DIR"); d != "" {
		return d
	}
	// By its absolute path: the script cds to the module root and then
	// hashes and re-runs itself by the path it was given.
	script, err := filepath.Abs("../../build/gpu-lib.sh")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", script, "cpu").Output()
	if err != nil {
		t.Fatalf("build/gpu-lib.sh cpu: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// TestCPUVariants runs the engine under each CPU variant this CPU can run
// and checks that (a) the greedy tokens of stories260K and of generated
// Q8_0, Q4_K and Q6_K models equal the built-in backend's (on a generated
// model under another ISA, they may part where the two best logits are
// closer than the ISAs' rounding moves them: those random models' logits
// are nearly flat); (b) the variant
// built for the built-in backend's own ISA gives the same logits, bit for
// bit; (c) the variant really runs: its name is reported, its library and
// no other is mapped, and gemm.c's AVX2 prompt kernels run exactly when the
// variant has AVX2 (the baseline x64 variant runs ggml's portable code
// alone), with the same bits as ggml's kernels of that variant.
func TestCPUVariants(t *testing.T) {
	dir := cpuLibDir(t)
	libs, _ := filepath.Glob(filepath.Join(dir, "libggml-cpu-*.so"))
	if len(libs) == 0 {
		t.Fatalf("no libggml-cpu-*.so in %s", dir)
	}
	tmp := t.TempDir()
	models := []string{stories}
	// Heads of 64 and, in the last, 72 (elements past the F16 dot
	// products' last step).
	for _, c := range []struct {
		arch, typ string
		embd      int
	}{{"llama", "Q8_0", 256}, {"qwen3", "Q4_K", 256}, {"llama", "Q6_K", 256}, {"llama", "Q8_0", 288}} {
		p := filepath.Join(tmp, fmt.Sprintf("%s-%s-%d.gguf", c.arch, c.typ, c.embd))
		err := modelgen.Generate(p, modelgen.Config{Arch: c.arch, Layers: 2, Embd: c.embd, FF: 768, Heads: 4,
			KVHeads: 2, Vocab: 1003, Type: c.typ, Seed: 11})
		if err != nil {
			t.Fatal(err)
		}
		models = append(models, p)
	}
	want, err := cpuCompute(models)
	if err != nil {
		t.Fatal(err)
	}
	if want.Variant != BuiltinCPU || len(want.Mapped) != 0 || runtime.GOOS != "linux" {
		t.Fatalf("the test process runs %s with %v mapped, want the built-in backend alone", want.Variant, want.Mapped)
	}
	ran := 0
	for _, lib := range libs {
		variant := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(lib), "libggml-cpu-"), ".so")
		score, err := CPUScore(lib)
		if err != nil {
			t.Errorf("%s: %v", variant, err)
			continue
		}
		if score == 0 {
			t.Logf("%s: this CPU cannot run it (score 0)", variant)
			continue
		}
		ran++
		t.Run(variant, func(t *testing.T) {
			out := filepath.Join(tmp, variant+".json")
			cmd := exec.Command(os.Args[0], "-test.run", "^$")
			cmd.Env = append(os.Environ(), cpuChildLib+"="+lib, cpuChildModels+"="+strings.Join(models, ","), cpuChildOut+"="+out)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("child: %v\n%s", err, b)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var got cpuRun
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if got.Variant != variant || runtime.GOOS == "linux" && (len(got.Mapped) != 1 || got.Mapped[0] != filepath.Base(lib)) {
				t.Errorf("the child reports variant %q with %v mapped, want %q with %s alone", got.Variant, got.Mapped, variant, filepath.Base(lib))
			}
			if wantAVX2 := variant != "x64"; got.AVX2 != wantAVX2 {
				t.Errorf("the %s variant reports AVX2 %v", variant, got.AVX2)
			}
			same := variant == BuiltinCPUISA()
			for i, g := range got.Models {
				w, name := want.Models[i], filepath.Base(g.Path)
				if s := firstDiff(g.Tokens, w.Tokens); s >= 0 {
					// Up to step s both saw the same tokens, so the logits
					// of step s differ by arithmetic alone: another ISA sums
					// in another order (and x64 rounds Q8 activations
					// half away from zero, AVX2 half to even). A flip is
					// allowed only on a generated model, across ISAs, where
					// the built-in's two best logits are closer than that.
					gap, dev := top2Gap(w.Logits[s]), maxDev(w.Logits[s], g.Logits[s])
					if same || i == 0 || gap > 2*dev {
						t.Errorf("%s: greedy tokens %v, the built-in backend's %v (at step %d the best two logits are %.3g apart, the variant's logits within %.3g)",
							name, g.Tokens, w.Tokens, s, gap, dev)
					} else {
						t.Logf("%s: greedy tokens part at step %d, a near tie: the best two logits %.3g apart, %s's logits off by up to %.3g",
							name, s, gap, variant, dev)
					}
				}
				differ := 0
				for s := range g.Logits {
					for j := range g.Logits[s] {
						if g.Logits[s][j] != w.Logits[s][j] {
							differ++
						}
					}
				}
				switch {
				case same && differ > 0:
					t.Errorf("%s: %d logits differ from the built-in backend's, which has this variant's ISA", name, differ)
				default:
					t.Logf("%s: %d of %d logits differ from the built-in backend's (%s)", name, differ,
						len(g.Logits)*len(g.Logits[0]), map[bool]string{true: "same ISA", false: "another ISA"}[same])
				}
				if g.GemmDiffer != 0 {
					t.Errorf("%s: %d logits of a 17-token batch and the steps after it differ between gemm.c's kernels and ggml's under %s", name, g.GemmDiffer, variant)
				}
				quantized := i > 0
				if wantOurs := got.AVX2 && quantized; (g.Products > 0) != wantOurs {
					t.Errorf("%s: %d products on gemm.c's kernels under %s (AVX2 %v)", name, g.Products, variant, got.AVX2)
				}
				if (g.AttnProducts > 0) != got.AVX2 {
					t.Errorf("%s: %d attention products on attn.c's kernels under %s (AVX2 %v)", name, g.AttnProducts, variant, got.AVX2)
				}
			}
		})
	}
	if ran < 2 {
		t.Errorf("this CPU ran %d of the variants in %s; x64 runs anywhere and the test machine has AVX2", ran, dir)
	}
}

func firstDiff(a, b []int32) int {
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return len(a)
	}
	return -1
}

// top2Gap is the distance between the two largest logits (as bits).
func top2Gap(l []uint32) float64 {
	a, b := math.Inf(-1), math.Inf(-1)
	for _, u := range l {
		f := float64(math.Float32frombits(u))
		if f > a {
			a, b = f, a
		} else if f > b {
			b = f
		}
	}
	return a - b
}

// maxDev is the largest |x - y| of two rows of logits (as bits).
func maxDev(x, y []uint32) float64 {
	m := 0.0
	for i := range x {
		m = max(m, math.Abs(float64(math.Float32frombits(x[i]))-float64(math.Float32frombits(y[i]))))
	}
	return m
}
