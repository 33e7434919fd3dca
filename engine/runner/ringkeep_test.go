// Not built for Windows: these tests stop and kill processes with signals
// and read /proc (stdio_windows_test.go covers the Windows child).

//go:build !windows

package runner

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/engine/ring"
)

// ringReply runs g on the ring of rp from d and returns the reply's tokens,
// its text and the stats.
func ringReply(t testing.TB, d *device, lp LoadParams, rp RingParams, g GenerateParams) ([]int32, string, Stats) {
	t.Helper()
	var ids []int32
	var text strings.Builder
	st, err := d.sup.RingGenerate(context.Background(), lp, rp, g, func(tk Token) error {
		ids = append(ids, tk.ID)
		text.WriteString(tk.Text)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids, text.String(), st
}

// onlyNew checks that a request on a kept job kept cached tokens (the full
// micro-batches of the prefill before it) and evaluated only the prompt
// tokens after them, in one pass, and one row per generated token.
func onlyNew(t *testing.T, what string, st Stats, cached int) {
	t.Helper()
	if st.CachedTokens != cached || st.Rows != st.PromptTokens-st.CachedTokens+st.DecodeTokens || st.Passes != 1+st.DecodeTokens {
		t.Errorf("%s: stats %+v: want %d cached, %d-%d prompt rows in one pass and one pass per decoded token",
			what, st, cached, st.PromptTokens, st.CachedTokens)
	}
}

// A conversation on a kept ring job: each turn gives the tokens a fresh job
// gives on the whole conversation while evaluating only the micro-batches a
// fresh job computes differently (the full ones before, 768 tokens, are kept); a
// re-plan between turns starts afresh with the same reply; another head
// asking the workers for a job ends the idle job; an idle job ends on its
// own when its time is up, and the workers free their windows.
func TestRingKeptJob(t *testing.T) {
	head, other, w1, w2 := newDevice(t), newDevice(t), newDevice(t), newDevice(t)
	serveRing(t, w1, head, other, w2)
	serveRing(t, w2, head, other, w1)
	lp := LoadParams{Model: smallModel, NCtx: 2048, Threads: 1}
	layers, nEmbd := modelShape(t, smallModel)
	plan := func(id uint64, h *device, workers ...*device) RingParams {
		return ringParams(evenPlan(id, layers, nEmbd, 1, append([]*device{h}, workers...)...), h, workers...)
	}
	kept := func(rp RingParams) RingParams {
		rp.KeepMS = 60_000
		return rp
	}

	// The references: fresh jobs on another head (which keeps nothing).
	// More than one prefill pass (512 tokens): the first is kept.
	turn1 := *greedy(24)
	turn1.Prompt = strings.Repeat("Once upon a time there was a little dog. ", 60)
	want1, text1, _ := ringReply(t, other, lp, plan(1, other, w1, w2), turn1)
	turn2 := turn1
	turn2.Prompt = turn1.Prompt + text1 + " Then the little dog said"
	want2, _, fresh2 := ringReply(t, other, lp, plan(2, other, w1, w2), turn2)
	if fresh2.CachedTokens != 0 || fresh2.Rows != fresh2.PromptTokens+fresh2.DecodeTokens {
		t.Fatalf("a fresh job's stats %+v: want every prompt token evaluated", fresh2)
	}

	got, _, st := ringReply(t, head, lp, kept(plan(10, head, w1, w2)), turn1)
	if diff := cmp.Diff(want1, got); diff != "" || st.CachedTokens != 0 {
		t.Fatalf("turn 1 (cached %d; -fresh +kept)\n%s", st.CachedTokens, diff)
	}
	// Kept: turn 1's prompt up to its last full micro-batch (ring.MicroRows:
	// 64 rows on three devices), which its later turns share.
	mb := ring.MicroRows(prefillChunk, 3, false)
	cached := st.PromptTokens / mb * mb
	// The agent numbers every plan it makes: the same plan under a new ID
	// reuses the job.
	got, _, st = ringReply(t, head, lp, kept(plan(11, head, w1, w2)), turn2)
	if diff := cmp.Diff(want2, got); diff != "" {
		t.Errorf("turn 2 on the kept job (-fresh job +kept job)\n%s", diff)
	}
	onlyNew(t, "turn 2", st, cached)
	for _, d := range st.Devices[1:] {
		if d.Fetched != 0 || d.ComputeMS <= 0 {
			t.Errorf("worker stats %+v on the kept job: want compute measured and nothing fetched", d)
		}
	}
	t.Logf("turn 2: %d of %d prompt tokens cached; %d rows in %d passes (a fresh job: %d rows)", st.CachedTokens, st.PromptTokens, st.Rows, st.Passes, fresh2.Rows)

	t.Run("re-plan between turns", func(t *testing.T) {
		// Another ring order: the kept job ends, a fresh one answers alike.
		swapped := kept(plan(12, head, w2, w1))
		got, _, st := ringReply(t, head, lp, swapped, turn2)
		if diff := cmp.Diff(want2, got); diff != "" {
			t.Errorf("after a re-plan (-fresh job elsewhere +here)\n%s", diff)
		}
		if st.CachedTokens != 0 || st.Rows != st.PromptTokens+st.DecodeTokens {
			t.Errorf("stats %+v after a re-plan: want a fresh job", st)
		}
		// The same conversation again on the new plan: its first pass is
		// kept.
		got, _, st = ringReply(t, head, lp, swapped, turn2)
		if diff := cmp.Diff(want2, got); diff != "" {
			t.Errorf("the same turn again (-fresh +kept)\n%s", diff)
		}
		onlyNew(t, "the same turn again", st, cached)
	})

	t.Run("another head takes the idle workers", func(t *testing.T) {
		// head holds its job on w1 and w2 idle: another head's job is not
		// refused (a refusal fails here: no re-planner is given).
		got, _, st := ringReply(t, other, lp, plan(20, other, w1, w2), turn1)
		if diff := cmp.Diff(want1, got); diff != "" || st.Replans != 0 {
			t.Errorf("another head's job beside an idle one (replans %d; -want +got)\n%s", st.Replans, diff)
		}
		// head's job is gone: its next turn starts afresh, same reply.
		got, _, st = ringReply(t, head, lp, kept(plan(21, head, w2, w1)), turn2)
		if diff := cmp.Diff(want2, got); diff != "" {
			t.Errorf("after the idle job was taken (-fresh +got)\n%s", diff)
		}
		if st.CachedTokens != 0 || st.Replans != 0 {
			t.Errorf("stats %+v: want a fresh job without re-plans", st)
		}
	})

	t.Run("the parent ends the idle job", func(t *testing.T) {
		ringReply(t, head, lp, kept(plan(25, head, w1, w2)), turn1)
		if !mapsPath(t, w1.sup.PID(), w1.cache) {
			t.Fatal("worker 1 does not map its slice while the job is kept")
		}
		if err := head.sup.EndRingJob(context.Background()); err != nil {
			t.Fatal(err)
		}
		waitUnmapped(t, 10*time.Second, w1, w2)
	})

	t.Run("an idle job ends when its time is up", func(t *testing.T) {
		short := plan(30, head, w1, w2)
		short.KeepMS = 300
		ringReply(t, head, lp, short, turn1)
		idle := anonKB(t, w1.sup.PID())
		waitUnmapped(t, 15*time.Second, w1, w2)
		t.Logf("worker 1: %d kB anonymous memory while the job was idle, %d kB after it ended", idle, anonKB(t, w1.sup.PID()))
		_, _, st := ringReply(t, head, lp, short, turn2)
		if st.CachedTokens != 0 {
			t.Errorf("stats %+v: the job ended, want a fresh one", st)
		}
	})
}

// waitUnmapped waits until no worker maps a slice any more: its job ended.
func waitUnmapped(t *testing.T, within time.Duration, workers ...*device) {
	t.Helper()
	deadline := time.Now().Add(within)
	for _, w := range workers {
		for mapsPath(t, w.sup.PID(), w.cache) {
			if time.Now().After(deadline) {
				t.Fatalf("worker %s still maps its slice after %v", w.id, within)
			}
			time.Sleep(20 * time.Millisecond) // polling with a deadline
		}
	}
}

// anonKB is process pid's resident anonymous memory (RssAnon) in kB.
func anonKB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "RssAnon:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// BenchmarkRingKeep times the first token of a conversation's second turn
// on a 3-process ring (head and two workers on loopback, k = 1, one thread
// each): on the job kept from the first turn (only the new tokens
// evaluated) and on a fresh job (another ring order: the kept job ends, a
// new one starts and prefills the whole conversation). Both must give the
// same tokens. It reports the medians and fresh/kept.
// HOMERING_BENCH_MODEL names a bigger model (see BenchmarkRingDecode).
func BenchmarkRingKeep(b *testing.B) {
	model := benchModel()
	head, w1, w2 := newDeviceWith(b, Options{}), newDeviceWith(b, Options{}), newDeviceWith(b, Options{})
	for _, w := range []*device{w1, w2} {
		serveRing(b, w, head, w1, w2)
	}
	lp := LoadParams{Model: model, NCtx: 1024, Threads: 1}
	layers, nEmbd := modelShape(b, model)
	planA := ringParams(evenPlan(1, layers, nEmbd, 1, head, w1, w2), head, w1, w2)
	planA.KeepMS = 60_000
	planB := ringParams(evenPlan(2, layers, nEmbd, 1, head, w2, w1), head, w2, w1)
	turn1 := *greedy(16)
	// Over one prefill pass (512 tokens): turn 2 keeps the first.
	turn1.Prompt = strings.Repeat("Once upon a time there was a little dog who liked to run in the park. ", 40)
	ttft := func(rp RingParams, g GenerateParams) (float64, []int32, Stats) {
		var got []int32
		var first time.Duration
		start := time.Now()
		st, err := head.sup.RingGenerate(context.Background(), lp, rp, g, func(tk Token) error {
			if got = append(got, tk.ID); len(got) == 1 {
				first = time.Since(start)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		return float64(first) / float64(time.Millisecond), got, st
	}
	// Warm: slices fetched, models mapped, both plans' windows opened once.
	_, text1, _ := ringReply(b, head, lp, planA, turn1)
	turn2 := turn1
	turn2.Prompt = turn1.Prompt + text1 + " Then the little dog said"
	ringReply(b, head, lp, planB, turn2)
	var kept, fresh []float64
	var cached, prompt int
	for b.Loop() {
		ttft(planA, turn1) // turn 1, kept
		k, gotKept, st := ttft(planA, turn2)
		if st.CachedTokens == 0 {
			b.Fatalf("turn 2 did not reuse the kept job: %+v", st)
		}
		cached, prompt = st.CachedTokens, st.PromptTokens
		f, gotFresh, st := ttft(planB, turn2)
		if st.CachedTokens != 0 {
			b.Fatalf("the fresh job reused a cache: %+v", st)
		}
		if !slices.Equal(gotKept, gotFresh) {
			b.Fatalf("turn 2 on the kept job %v differs from a fresh job's %v", gotKept, gotFresh)
		}
		kept, fresh = append(kept, k), append(fresh, f)
	}
	med := func(v []float64) float64 {
		sort.Float64s(v)
		return v[len(v)/2]
	}
	b.ReportMetric(med(kept), "kept_ttft_ms")
	b.ReportMetric(med(fresh), "fresh_ttft_ms")
	b.ReportMetric(med(fresh)/med(kept), "fresh/kept")
	b.ReportMetric(float64(cached), "cached_tokens")
	b.ReportMetric(float64(prompt), "prompt_tokens")
}
