package ggml

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"testing"
)

const stories = "../../../shared/models/stories260K.gguf"

// Environment of the child process in TestProcessSplit.
const (
	childEnvModel = "HOMERING_GGML_CHILD_MODEL"
	childEnvFirst = "HOMERING_GGML_CHILD_FIRST"
)

func TestMain(m *testing.M) {
	if lib := os.Getenv(cpuChildLib); lib != "" { // a child of TestCPUVariants
		if err := cpuChild(lib); err != nil {
			fmt.Fprintln(os.Stderr, "cpu child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if path := os.Getenv(childEnvModel); path != "" {
		first, _ := strconv.Atoi(os.Getenv(childEnvFirst))
		if err := runChild(path, first, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testModels lists stories260K and the generated <arch>-<type>.gguf models
// (build/gen-models.sh writes them to testdata/models at set-up).
func testModels(t *testing.T) []string {
	t.Helper()
	paths := []string{stories}
	gen, _ := filepath.Glob("../../testdata/models/*.gguf")
	re := regexp.MustCompile(`^(llama|mistral|qwen2|qwen3|qwen3moe|gemma2|gemma3|phi3|gpt-oss)-(rope-freqs-|rope-linear-|short-)?(F32|F16|Q8_0|Q4_0|Q4_K|Q6_K)\.gguf$`)
	for _, g := range gen {
		if re.MatchString(filepath.Base(g)) {
			paths = append(paths, g)
		}
	}
	sort.Strings(paths[1:])
	return paths
}

func openT(t *testing.T, path string) *Model {
	t.Helper()
	m, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m
}

func newWindowT(t *testing.T, m *Model, p WindowParams) *Window {
	t.Helper()
	w, err := m.NewWindow(p)
	if err != nil {
		t.Fatalf("NewWindow(%+v): %v", p, err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

const (
	promptLen = 32
	decodeLen = 16
	testNCtx  = 256
)

func prompt(nVocab int) []int32 {
	r := rand.New(rand.NewPCG(1, 2))
	p := make([]int32, promptLen)
	p[0] = 1 // <s>
	for i := 1; i < len(p); i++ {
		p[i] = int32(3 + r.IntN(nVocab-3))
	}
	return p
}

func argmax(v []float32) int32 {
	best := 0
	for i := range v {
		if v[i] > v[best] {
			best = i
		}
	}
	return int32(best)
}

// run is one generation: the prompt's last-token logits, then decodeLen
// steps each feeding one token. feed is the token sequence after the prompt;
// nil means greedy (and the chosen tokens are returned).
type runResult struct {
	logits [][]float32 // decodeLen+1 rows
	tokens []int32     // the decodeLen fed tokens
}

// evalFn evaluates tokens at pos through some arrangement of windows and
// returns the last token's logits.
type evalFn func(tokens []int32, pos int) ([]float32, error)

func generate(t *testing.T, eval evalFn, nVocab int, feed []int32) runResult {
	t.Helper()
	var res runResult
	p := prompt(nVocab)
	lg, err := eval(p, 0)
	if err != nil {
		t.Fatalf("prompt: %v", err)
	}
	res.logits = append(res.logits, lg)
	pos := len(p)
	for i := 0; i < decodeLen; i++ {
		tok := argmax(lg)
		if feed != nil {
			tok = feed[i]
		}
		res.tokens = append(res.tokens, tok)
		if lg, err = eval([]int32{tok}, pos); err != nil {
			t.Fatalf("decode step %d: %v", i, err)
		}
		res.logits = append(res.logits, lg)
		pos++
	}
	return res
}

// chain evaluates through windows in order: the first takes tokens, the
// others the previous hidden state.
func chain(ws ...*Window) evalFn {
	return func(tokens []int32, pos int) ([]float32, error) {
		out, err := ws[0].EvalTokens(tokens, pos)
		for _, w := range ws[1:] {
			if err != nil {
				return nil, err
			}
			out, err = w.EvalHidden(out, pos)
		}
		return out, err
	}
}

// diff returns the number of differing bits patterns and the max |Δ|.
func diff(a, b [][]float32) (ndiff int, maxAbs float64) {
	for i := range a {
		for j := range a[i] {
			if math.Float32bits(a[i][j]) != math.Float32bits(b[i][j]) {
				ndiff++
				maxAbs = math.Max(maxAbs, math.Abs(float64(a[i][j]-b[i][j])))
			}
		}
	}
	return ndiff, maxAbs
}

func reference(t *testing.T, m *Model) runResult {
	t.Helper()
	info := m.Info()
	w := newWindowT(t, m, WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, NCtx: testNCtx, Threads: 1})
	return generate(t, chain(w), info.NVocab, nil)
}

func TestUnsplitGreedyIsDeterministic(t *testing.T) {
	m := openT(t, stories)
	a, b := reference(t, m), reference(t, m)
	if n, d := diff(a.logits, b.logits); n != 0 {
		t.Fatalf("two unsplit runs differ in %d logits (max |Δ| %g)", n, d)
	}
	for _, row := range a.logits {
		for _, v := range row {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("non-finite logit %v", v)
			}
		}
	}
}

// TestSplitEveryPoint: for every split point s, windows [0,s) + [s,L) give
// the unsplit logits bit for bit (prompt of 32 tokens + 16 greedy steps).
//
// s = L, an output head in a window of its own, is the one exception: the
// unsplit graph (like llama.cpp's) runs the last layer's attention output and
// FFN on the last token's row only, the split one on all rows, and ggml's F32
// matrix kernels round differently by batch size. Decode steps (one row) stay
// bit-identical; the prompt's logits may differ in the last bits.
func TestSplitEveryPoint(t *testing.T) {
	for _, path := range testModels(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			m := openT(t, path)
			info := m.Info()
			ref := reference(t, m)
			for s := 0; s <= info.NLayer; s++ {
				w0 := newWindowT(t, m, WindowParams{First: 0, Last: s, Embed: true, NCtx: testNCtx, Threads: 1})
				w1 := newWindowT(t, m, WindowParams{First: s, Last: info.NLayer, Output: true, NCtx: testNCtx, Threads: 1})
				got := generate(t, chain(w0, w1), info.NVocab, ref.tokens)
				if s < info.NLayer {
					if n, d := diff(ref.logits, got.logits); n != 0 {
						t.Errorf("split at %d: %d logits differ from unsplit, max |Δ| %g", s, n, d)
					}
				} else {
					if n, d := diff(ref.logits[1:], got.logits[1:]); n != 0 {
						t.Errorf("output head alone: %d decode logits differ from unsplit, max |Δ| %g", n, d)
					}
					if _, d := diff(ref.logits[:1], got.logits[:1]); d > 1e-5*maxAbs(ref.logits[0]) {
						t.Errorf("output head alone: prompt logits differ by %g (max |logit| %g)", d, maxAbs(ref.logits[0]))
					} else if d > 0 {
						t.Logf("output head alone: prompt logits max |Δ| %g (max |logit| %g)", d, maxAbs(ref.logits[0]))
					}
				}
				if err := errors.Join(w0.Close(), w1.Close()); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func maxAbs(v []float32) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, math.Abs(float64(x)))
	}
	return m
}

func TestThreeWindows(t *testing.T) {
	for _, path := range testModels(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			m := openT(t, path)
			info := m.Info()
			ref := reference(t, m)
			a, b := info.NLayer/3, 2*info.NLayer/3
			if a == 0 {
				a = 1
			}
			w0 := newWindowT(t, m, WindowParams{First: 0, Last: a, Embed: true, NCtx: testNCtx, Threads: 1})
			w1 := newWindowT(t, m, WindowParams{First: a, Last: b, NCtx: testNCtx, Threads: 1})
			w2 := newWindowT(t, m, WindowParams{First: b, Last: info.NLayer, Output: true, NCtx: testNCtx, Threads: 1})
			got := generate(t, chain(w0, w1, w2), info.NVocab, ref.tokens)
			if n, d := diff(ref.logits, got.logits); n != 0 {
				t.Errorf("[0,%d)+[%d,%d)+[%d,%d): %d logits differ, max |Δ| %g", a, a, b, b, info.NLayer, n, d)
			}
		})
	}
}

// runChild serves window [first, L) with the output head: it reads frames
// (pos, n, n*NEmbd float32) from r and writes the last token's logits to w.
func runChild(path string, first int, r io.Reader, w io.Writer) error {
	m, err := Open(path)
	if err != nil {
		return err
	}
	defer m.Close()
	info := m.Info()
	win, err := m.NewWindow(WindowParams{First: first, Last: info.NLayer, Output: true, NCtx: testNCtx, Threads: 1})
	if err != nil {
		return err
	}
	defer win.Close()
	br, bw := bufio.NewReader(r), bufio.NewWriter(w)
	for {
		var hdr [2]int32
		if err := binary.Read(br, binary.LittleEndian, &hdr); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		hidden := make([]float32, int(hdr[1])*info.NEmbd)
		if err := binary.Read(br, binary.LittleEndian, hidden); err != nil {
			return err
		}
		lg, err := win.EvalHidden(hidden, int(hdr[0]))
		if err != nil {
			return err
		}
		if err := binary.Write(bw, binary.LittleEndian, lg); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	}
}

// TestProcessSplit runs window [s,L) in a second process (this test binary,
// re-executed) and passes the hidden state through a pipe.
func TestProcessSplit(t *testing.T) {
	m := openT(t, stories)
	info := m.Info()
	ref := reference(t, m)
	s := info.NLayer / 2
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnvModel+"="+stories, childEnvFirst+"="+strconv.Itoa(s))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w0 := newWindowT(t, m, WindowParams{First: 0, Last: s, Embed: true, NCtx: testNCtx, Threads: 1})
	eval := func(tokens []int32, pos int) ([]float32, error) {
		h, err := w0.EvalTokens(tokens, pos)
		if err != nil {
			return nil, err
		}
		if err := binary.Write(stdin, binary.LittleEndian, [2]int32{int32(pos), int32(len(tokens))}); err != nil {
			return nil, err
		}
		if err := binary.Write(stdin, binary.LittleEndian, h); err != nil {
			return nil, err
		}
		lg := make([]float32, info.NVocab)
		return lg, binary.Read(stdout, binary.LittleEndian, lg)
	}
	got := generate(t, eval, info.NVocab, ref.tokens)
	if err := stdin.Close(); err != nil { // EOF ends the child
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	if n, d := diff(ref.logits, got.logits); n != 0 {
		t.Errorf("two-process split at %d: %d logits differ, max |Δ| %g", s, n, d)
	}
}

// TestKVTruncate: truncating the cache and evaluating again gives exactly
// what a fresh window gives.
// TestKVTruncate: a truncated cache, evaluated on, gives a fresh window's
// bits. On the gemmas (sliding window 16) the re-evaluated positions 20-31
// and the decode steps attend across the cut to a window of kept cells, as
// a kept ring job's reused prefix does.
func TestKVTruncate(t *testing.T) {
	for _, path := range []string{stories, "../../testdata/models/gemma3-Q8_0.gguf", "../../testdata/models/gemma2-Q4_K.gguf"} {
		t.Run(filepath.Base(path), func(t *testing.T) { testKVTruncate(t, path) })
	}
}

func testKVTruncate(t *testing.T, path string) {
	m := openT(t, path)
	info := m.Info()
	ref := reference(t, m)
	w := newWindowT(t, m, WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, NCtx: testNCtx, Threads: 1})
	seq := append(prompt(info.NVocab), ref.tokens...)
	// Fill the cache with other tokens past position 20, then go back.
	if _, err := w.EvalTokens(seq[:20], 0); err != nil {
		t.Fatal(err)
	}
	junk := make([]int32, 30)
	for i := range junk {
		junk[i] = int32(5 + i)
	}
	if _, err := w.EvalTokens(junk, 20); err != nil {
		t.Fatal(err)
	}
	w.KVTruncate(20)
	if got := w.KVLen(); got != 20 {
		t.Fatalf("KVLen after KVTruncate(20) = %d", got)
	}
	lg, err := w.EvalTokens(seq[20:promptLen], 20)
	if err != nil {
		t.Fatal(err)
	}
	got := [][]float32{lg}
	for i := 0; i < decodeLen; i++ {
		if lg, err = w.EvalTokens(seq[promptLen+i:promptLen+i+1], promptLen+i); err != nil {
			t.Fatal(err)
		}
		got = append(got, lg)
	}
	if n, d := diff(ref.logits, got); n != 0 {
		t.Errorf("after truncate: %d logits differ from a fresh window, max |Δ| %g", n, d)
	}
	w.KVClear()
	if w.KVLen() != 0 {
		t.Fatalf("KVLen after KVClear = %d", w.KVLen())
	}
	if lg, err = w.EvalTokens(seq[:promptLen], 0); err != nil {
		t.Fatal(err)
	}
	if n, d := diff(ref.logits[:1], [][]float32{lg}); n != 0 {
		t.Errorf("after clear: %d logits differ, max |Δ| %g", n, d)
	}
}

func TestAllLogits(t *testing.T) {
	m := openT(t, stories)
	info := m.Info()
	all := newWindowT(t, m, WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, AllLogits: true, NCtx: testNCtx, Threads: 1})
	p := prompt(info.NVocab)
	lg, err := all.EvalTokens(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(lg) != len(p)*info.NVocab {
		t.Fatalf("AllLogits gave %d values, want %d", len(lg), len(p)*info.NVocab)
	}
	// Row i must be the argmax-relevant logits of token i: compare the last
	// row with a last-only window (the same rows, so the same bits).
	last := newWindowT(t, m, WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, NCtx: testNCtx, Threads: 1})
	want, err := last.EvalTokens(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	row := lg[(len(p)-1)*info.NVocab:]
	if n, d := diff([][]float32{want}, [][]float32{row}); n > 0 && d > 1e-4 {
		t.Errorf("last row of AllLogits differs from last-only logits: %d values, max |Δ| %g", n, d)
	}
}

// TestThreadsAgree: the model's thread pool (two threads) gives the same bits
// as one thread; ggml splits work by rows, never a sum. (Short: two spinning
// threads on a busy two-core machine are slow.)
func TestThreadsAgree(t *testing.T) {
	m := openT(t, stories)
	info := m.Info()
	ref := reference(t, m)
	w0 := newWindowT(t, m, WindowParams{First: 0, Last: 2, Embed: true, NCtx: testNCtx, Threads: 2})
	w1 := newWindowT(t, m, WindowParams{First: 2, Last: info.NLayer, Output: true, NCtx: testNCtx, Threads: 2})
	eval := chain(w0, w1)
	got := make([][]float32, 3)
	var err error
	if got[0], err = eval(prompt(info.NVocab), 0); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(got); i++ {
		if got[i], err = eval(ref.tokens[i-1:i], promptLen+i-1); err != nil {
			t.Fatal(err)
		}
	}
	if n, d := diff(ref.logits[:len(got)], got); n != 0 {
		t.Errorf("two threads: %d logits differ from one thread, max |Δ| %g", n, d)
	}
}

// TestPastPadding crosses the 256-cell KV padding (n_kv 256 -> 512) in
// chunks, split and unsplit: the same bits.
func TestPastPadding(t *testing.T) {
	m := openT(t, stories)
	info := m.Info()
	seq := make([]int32, 300)
	for i := range seq {
		seq[i] = int32(3 + (i*37)%(info.NVocab-3))
	}
	run := func(ws ...*Window) [][]float32 {
		eval := chain(ws...)
		var out [][]float32
		for _, c := range [][2]int{{0, 200}, {200, 255}, {255, 256}, {256, 257}, {257, 300}} {
			lg, err := eval(seq[c[0]:c[1]], c[0])
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, lg)
		}
		return out
	}
	const nctx = 600 // rounded up to 768 cells
	full := newWindowT(t, m, WindowParams{First: 0, Last: info.NLayer, Embed: true, Output: true, NCtx: nctx, Threads: 1})
	want := run(full)
	w0 := newWindowT(t, m, WindowParams{First: 0, Last: 3, Embed: true, NCtx: nctx, Threads: 1})
	w1 := newWindowT(t, m, WindowParams{First: 3, Last: info.NLayer, Output: true, NCtx: nctx, Threads: 1})
	if n, d := diff(want, run(w0, w1)); n != 0 {
		t.Errorf("past 256 cells: %d logits differ, max |Δ| %g", n, d)
	}
	if w0.KVBytes() != int64(2*3*768*info.NHeadKV*info.NEmbdHead*2) {
		t.Errorf("KVBytes = %d, want 2 x 3 layers x 768 cells x %d x 2 bytes", w0.KVBytes(), info.NHeadKV*info.NEmbdHead)
	}
}
