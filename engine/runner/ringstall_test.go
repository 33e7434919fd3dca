// Not built for Windows: these tests stop and kill processes with signals
// and read /proc (stdio_windows_test.go covers the Windows child).

//go:build !windows

package runner

import (
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A worker stopped mid-reply (SIGSTOP: its sockets stay open, nothing
// closes, it only stops answering) is noticed by silence: its link
// answers no pings. The head re-plans without it and finishes the reply
// equal to the unfaulted one.
func TestRingWorkerStopped(t *testing.T) {
	r := newThreeRing(t)
	head, w1, w2, lp, g, want, rp := r.head, r.w1, r.w2, r.lp, r.g, r.want, r.rp
	victim := w1.sup.PID()
	if victim <= 0 {
		t.Fatal("worker 1 has no runner process")
	}
	t.Cleanup(func() { _ = syscall.Kill(victim, syscall.SIGCONT) })
	var at []time.Time // when each token came
	got, st, err := ringTokens(t, head, lp, rp, g, func(n int) {
		at = append(at, time.Now())
		if n == 3 {
			_ = syscall.Kill(victim, syscall.SIGSTOP)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reply (-unfaulted +faulted)\n%s", diff)
	}
	if st.Replans != 1 || len(st.Devices) != 2 || st.Devices[1].ID != w2.did {
		t.Fatalf("stats %+v: want one replan, the stopped worker gone", st)
	}
	var stall time.Duration // the silence, the re-plan and the re-prefill
	for i := 3; i < len(at); i++ {
		stall = max(stall, at[i].Sub(at[i-1]))
	}
	t.Logf("longest gap between tokens after the stop: %v (head: loss noticed to next token %.1f ms)", stall.Round(time.Millisecond), st.LossToTokenMS)
}
