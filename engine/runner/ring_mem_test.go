// Not built for Windows: these tests stop and kill processes with signals
// and read /proc (stdio_windows_test.go covers the Windows child).

//go:build !windows

package runner

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"homering/internal/testlog"
)

// BenchmarkRingMemory measures what a ring job costs each device in
// anonymous memory (what memory pressure counts; weights are page cache):
// a 3-process ring (head and two workers on loopback, k = 1, layers split
// evenly), a cold job (the workers fetch their slices from the head) and
// three warm ones. It samples every runner child's RssAnon every 5 ms and reports
// each device's peak, and the parts of the head's peak that it logs at the
// end of a job (Go heap, Go runtime, KV caches, compute buffers, the rest).
// HOMERING_BENCH_MODEL picks the model (CI: the small generated one), e.g.
// ../../testdata/models/llama-1g-Q8_0.gguf.
func BenchmarkRingMemory(b *testing.B) {
	model := benchModel()
	logs := &testlog.Buffer{}
	// The children's stderr reaches the supervisor's log at debug level:
	// the head's memory line is read from there.
	o := Options{Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	head, w1, w2 := newDeviceWith(b, o), newDeviceWith(b, o), newDeviceWith(b, o)
	serveRing(b, w1, head, w2)
	serveRing(b, w2, head, w1)
	workers := map[int]string{w1.sup.PID(): "w1", w2.sup.PID(): "w2"}
	lp := LoadParams{Model: model, NCtx: 512, Threads: 1}
	g := *greedy(16)
	g.Prompt = "Once upon a time"
	layers, nEmbd := modelShape(b, model)
	rp := ringParams(evenPlan(1, layers, nEmbd, 1, head, w1, w2), head, w1, w2)
	ignore := func(Token) error { return nil }

	job := func(name string) {
		idle := childAnon()
		logs.Reset()
		stop := make(chan struct{})
		done := make(chan map[int]int64)
		go func() { done <- sampleChildAnon(stop, 5*time.Millisecond) }()
		if _, err := head.sup.RingGenerate(context.Background(), lp, rp, g, ignore); err != nil {
			b.Fatal(err)
		}
		close(stop)
		peak := <-done
		var parts []string
		for pid, v := range peak {
			role, ok := workers[pid]
			if !ok {
				role = "head"
			}
			b.ReportMetric(float64(v)/(1<<20), name+"_"+role+"_anon_MB")
			parts = append(parts, fmt.Sprintf("%s %.1f MB (idle %.1f)", role, float64(v)/(1<<20), float64(idle[pid])/(1<<20)))
		}
		// The head logs its account as the job ends; the line may reach the
		// supervisor's stderr reader after the done event.
		line := headMemoryLine(logs.String())
		for deadline := time.Now().Add(3 * time.Second); len(line) == 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond) // polling for the log line, with a deadline
			line = headMemoryLine(logs.String())
		}
		for _, k := range []string{"anon_mb", "go_heap_mb", "go_free_mb", "go_other_mb", "kv_mb", "compute_mb", "rest_mb"} {
			if v, ok := line[k]; ok {
				b.ReportMetric(v, name+"_head_"+strings.TrimSuffix(k, "_mb")+"_MB")
			}
		}
		b.Logf("%s job: peak RssAnon %s; head's own account: %v", name, strings.Join(parts, ", "), line)
	}
	for b.Loop() {
		for _, w := range []*device{w1, w2} {
			_ = os.RemoveAll(w.cache) // a cold job: every slice travels
			_ = os.MkdirAll(w.cache, 0o755)
		}
		job("cold")
		job("warm")
		job("warm2") // memory the head keeps across jobs shows here
		job("warm3")
	}
}

var memKV = regexp.MustCompile(`([a-z_]+_mb)=(-?[0-9.]+)`)

// headMemoryLine finds the head's "ring job memory" log line (relayed by
// the supervisor) and returns its numbers.
func headMemoryLine(logs string) map[string]float64 {
	out := map[string]float64{}
	for _, l := range strings.Split(logs, "\n") {
		if !strings.Contains(l, "ring job memory") {
			continue
		}
		l = strings.ReplaceAll(l, `\"`, `"`)
		for _, m := range memKV.FindAllStringSubmatch(l, -1) {
			if v, err := strconv.ParseFloat(m[2], 64); err == nil {
				out[m[1]] = v
			}
		}
	}
	return out
}

// childAnon is the RssAnon of every child process of this one.
func childAnon() map[int]int64 {
	out := map[int]int64{}
	ents, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(self) {
			continue
		}
		if s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
			out[pid] = statusKB(s, "RssAnon:")
		}
	}
	return out
}

func statusKB(status []byte, key string) int64 {
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n * 1024
		}
	}
	return 0
}

// sampleChildAnon samples childAnon every period until stop and returns
// each child's peak.
func sampleChildAnon(stop <-chan struct{}, period time.Duration) map[int]int64 {
	peak := map[int]int64{}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		for pid, v := range childAnon() {
			peak[pid] = max(peak[pid], v)
		}
		select {
		case <-stop:
			return peak
		case <-t.C:
		}
	}
}
