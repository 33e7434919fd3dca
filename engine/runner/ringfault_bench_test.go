// Not built for Windows: these tests stop and kill processes with signals
// and read /proc (stdio_windows_test.go covers the Windows child).

//go:build !windows

package runner

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"homering/discovery/deviceid"
	"homering/engine/ring"
	"homering/engine/ring/wire"
	"homering/halda/lpsolve"
)

// BenchmarkRingWorkerKilled measures the time from killing a worker
// mid-reply to the next token on a 3-process ring (a head and two workers
// on loopback, k = 1, layers split evenly, one thread each). The middle
// worker is killed, so the re-plan gives the last worker (the survivor)
// the layers before its own: it keeps those it holds and fetches the rest.
// The breakdown comes from the processes' own log lines (one clock, one
// machine): detect (kill → the head notices the loss), replan (→ the new
// plan, solved in the child, installed), prepare (→ the survivor's windows open; its fetch and
// open times are logged), prefill (→ the next token: the re-prefill and
// the first token). Each iteration restarts the killed worker and resets
// the survivor's cache to what it held before the kill.
// HOMERING_BENCH_MODEL picks the model as for BenchmarkRingDecode.
//
// grows: the first plan splits the layers evenly over the three devices and
// the re-plan is Halda's over the two left (equal devices), so the survivor
// may run other layers (fetched into a new slice; on the default 4-layer
// model it keeps one of its two). keeps: the first plan gives the survivor
// the window the re-plan gives it: it fetches nothing and only opens its
// cached slice.
func BenchmarkRingWorkerKilled(b *testing.B) {
	for _, keep := range []bool{false, true} {
		name := "survivor_grows"
		if keep {
			name = "survivor_keeps"
		}
		b.Run(name, func(b *testing.B) { ringWorkerKilled(b, keep) })
	}
}

func ringWorkerKilled(b *testing.B, keep bool) {
	model := benchModel()
	dev := func() (*device, *lineLog) {
		logs := &lineLog{}
		return newDeviceWith(b, Options{Log: slog.New(logs), MinBackoff: 50 * time.Millisecond}), logs
	}
	head, headLog := dev()
	w1, _ := dev()
	w2, w2Log := dev()
	serveRing(b, w1, head, w2)
	serveRing(b, w2, head, w1)
	lp := LoadParams{Model: model, NCtx: 256, Threads: 1}
	g := *greedy(8)
	g.Prompt = "Once upon a time"
	layers, nEmbd := modelShape(b, model)
	first := evenPlan(1, layers, nEmbd, 1, head, w1, w2)
	problem := withProblem(b, RingParams{}, model, head, w1, w2).Problem
	if keep {
		// The first plan gives w2 the window the child's re-plan without w1
		// gives it (the one re-plan, ring.PlanWithout, worked out here as
		// the child will): it keeps its slice.
		_, after, err := ring.PlanWithout(*problem, []deviceid.ID{w1.did}, lpsolve.Solver{})
		if err != nil {
			b.Fatal(err)
		}
		if len(after.Ring) != 2 || after.K != 1 || after.Ring[1].Layers[0].Start < 2 {
			b.Fatalf("the re-plan without w1 is %+v: want the head, then w2 from a layer past 1", after.Ring)
		}
		s := after.Ring[1].Layers[0].Start
		first.Devices[0].Windows = []wire.Range{{Start: 0, End: s / 2}}
		first.Devices[1].Windows = []wire.Range{{Start: s / 2, End: s}}
		first.Devices[2].Windows = []wire.Range{{Start: s, End: layers}}
	}
	params := func() RingParams {
		rp := ringParams(first, head, w1, w2)
		rp.Problem = problem
		return rp
	}
	// Warm up: the slices of the first plan fetched, the model mapped.
	if _, err := head.sup.RingGenerate(context.Background(), lp, params(), g, func(Token) error { return nil }); err != nil {
		b.Fatal(err)
	}
	warm := cacheFiles(b, w2.cache)
	var total, detect, replanMS, prepare, prefill []float64
	for b.Loop() {
		serveRing(b, w1, head, w2) // restarts the killed one
		rp := params()
		victim := w1.sup.PID()
		headLog.reset()
		w2Log.reset()
		var killed, resumed time.Time
		n := 0
		st, err := head.sup.RingGenerate(context.Background(), lp, rp, g, func(Token) error {
			n++
			switch n {
			case 3:
				_ = syscall.Kill(victim, syscall.SIGSTOP)
				_ = syscall.Kill(victim, syscall.SIGKILL)
				killed = time.Now()
			case 4:
				resumed = time.Now()
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if st.Replans != 1 || resumed.IsZero() {
			b.Fatalf("stats %+v: want one re-plan and a token after it", st)
		}
		lost := headLog.at(b, killed, "ring lost devices")
		installed := headLog.at(b, lost, "ring plan installed")
		// "ring slice ready": what a worker logged before sub-windows (its
		// slice rebuilt; the baseline of this benchmark).
		open := w2Log.at(b, installed, "ring windows open", "ring slice ready")
		ms := func(a, z time.Time) float64 { return float64(z.Sub(a).Microseconds()) / 1000 }
		total = append(total, ms(killed, resumed))
		detect = append(detect, ms(killed, lost))
		replanMS = append(replanMS, ms(lost, installed))
		prepare = append(prepare, ms(installed, open))
		prefill = append(prefill, ms(open, resumed))
		b.Logf("kill → next token %.0f ms: detect %.0f, re-plan %.0f, survivor prepare %.0f (%s), re-prefill + first token %.0f; survivor fetched %d of %d slice bytes",
			total[len(total)-1], detect[len(detect)-1], replanMS[len(replanMS)-1], prepare[len(prepare)-1], w2Log.line("ring windows open", "ring slice ready"), prefill[len(prefill)-1],
			st.Devices[1].Fetched, st.Devices[1].SliceBytes)
		b.Logf("survivor's cache after the re-plan: %d bytes in %d files", dirBytes(b, w2.cache), len(cacheFiles(b, w2.cache)))
		// Back to the state before the kill.
		for _, f := range cacheFiles(b, w2.cache) {
			if !slices.Contains(warm, f) {
				_ = os.Remove(filepath.Join(w2.cache, f))
			}
		}
	}
	b.ReportMetric(median(total), "kill_to_token_ms")
	b.ReportMetric(median(detect), "detect_ms")
	b.ReportMetric(median(replanMS), "replan_ms")
	b.ReportMetric(median(prepare), "prepare_ms")
	b.ReportMetric(median(prefill), "prefill_ms")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	return s[len(s)/2]
}

func cacheFiles(t testing.TB, dir string) []string {
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

func dirBytes(t testing.TB, dir string) int64 {
	var n int64
	for _, f := range cacheFiles(t, dir) {
		if st, err := os.Stat(filepath.Join(dir, f)); err == nil {
			n += st.Size()
		}
	}
	return n
}

// lineLog keeps the stderr lines a supervisor passes on from its child
// (slog text lines with the child's own timestamps).
type lineLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *lineLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *lineLog) WithGroup(string) slog.Handler            { return l }
func (l *lineLog) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "stderr" {
			l.mu.Lock()
			l.lines = append(l.lines, a.Value.String())
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

func (l *lineLog) reset() {
	l.mu.Lock()
	l.lines = nil
	l.mu.Unlock()
}

func holds(s string, msgs []string) bool {
	return slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(s, m) })
}

// line is the last line holding one of msgs, without its time and level.
func (l *lineLog) line(msgs ...string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.lines) - 1; i >= 0; i-- {
		if s := l.lines[i]; holds(s, msgs) {
			if i := strings.Index(s, "msg="); i >= 0 {
				return s[i:]
			}
			return s
		}
	}
	return ""
}

// at is the time of the first line holding one of msgs logged at or after
// since.
func (l *lineLog) at(t testing.TB, since time.Time, msgs ...string) time.Time {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second) // stderr lines may trail the events
	for {
		l.mu.Lock()
		for _, s := range l.lines {
			f := strings.Fields(s)
			if len(f) == 0 || !strings.HasPrefix(f[0], "time=") || !holds(s, msgs) {
				continue
			}
			at, err := time.Parse(time.RFC3339, strings.TrimPrefix(f[0], "time="))
			if err == nil && !at.Before(since.Truncate(time.Millisecond)) {
				l.mu.Unlock()
				return at
			}
		}
		l.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no log line %q after %v", msgs, since)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}
