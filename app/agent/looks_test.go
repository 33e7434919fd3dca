package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/discovery/deviceid"
	"homering/halda"
	"homering/internal/testwait"
)

func TestMemSampler(t *testing.T) {
	const gib = 1 << 30
	var avail int64
	m := newMemSampler(func() (int64, int64, error) { return avail, 20 * gib, nil }, 2)
	t0 := time.Unix(0, 0)
	steps := []struct {
		name     string
		at       time.Duration
		avail    int64
		pressure float64 // of the newest sample
		n        int     // history length
	}{
		{"first reading is the baseline", 0, 10 * gib, 0, 1},
		{"within a second: no new reading", 500 * time.Millisecond, 9 * gib, 0, 1},
		{"1 GiB of 20 taken", time.Second, 9 * gib, 0.05, 2},
		{"more free than at the start clamps to 0; history keeps 2", 2 * time.Second, 12 * gib, 0, 2},
		// A steady load must not fade from the gauge as readings scroll out.
		{"baseline stays the first reading (10 GiB) after it scrolls out", 3 * time.Second, 8 * gib, 0.10, 2},
	}
	for _, s := range steps {
		avail = s.avail
		h := m.sample(t0.Add(s.at))
		if got := h[len(h)-1].Pressure; len(h) != s.n || got < s.pressure-1e-9 || got > s.pressure+1e-9 {
			t.Errorf("%s: pressure %.4f with %d samples, want %.4f with %d", s.name, got, len(h), s.pressure, s.n)
		}
	}
}

// A peer's memory history grows by one reading per look with a profile,
// measured from the first MemAvailable it reported; a failed look adds
// nothing and keeps what was seen.
func TestPeerMemoryHistory(t *testing.T) {
	const gib = 1 << 30
	type answer struct {
		avail int64
		err   error
	}
	answers := make(chan answer, 1)
	looked := make(chan struct{}, 1)
	c := &peerCache{look: func(ctx context.Context, peer deviceid.ID) (peerLook, error) {
		a := <-answers
		defer func() { looked <- struct{}{} }()
		if a.err != nil {
			return peerLook{}, a.err
		}
		return peerLook{rtt: 2 * time.Millisecond, profile: &halda.Device{RAMAvailable: a.avail, RAMTotal: 10 * gib}}, nil
	}}
	now := time.Now()
	p := deviceid.ForName("p")
	var got []float64
	for i, a := range []answer{{avail: 6 * gib}, {avail: 5 * gib}, {err: errors.New("link down")}, {avail: 7 * gib}} {
		answers <- a
		// Looks are stamped with the real clock, near now: 2 periods on is stale.
		c.get(p, now.Add(time.Duration(2*i)*peerEvery))
		<-looked
		waitForLook(t, c, p)
	}
	e := c.get(p, now) // fresh: no new look
	for _, s := range e.Memory {
		got = append(got, s.Pressure)
	}
	if diff := cmp.Diff([]float64{0, 0.1, 0}, got); diff != "" {
		t.Errorf("pressure history (-want +got):\n%s", diff)
	}
	if e.profile == nil || e.profile.RAMAvailable != 7*gib || e.RTTMs == nil || *e.RTTMs != 2 {
		t.Errorf("last look = %+v, want the 7 GiB profile and a 2 ms RTT", e)
	}
}

// waitForLook waits until no look at peer is running.
func waitForLook(t *testing.T, c *peerCache, peer deviceid.ID) {
	t.Helper()
	testwait.True(t, 5*time.Second, "the look to finish", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return !c.running[peer]
	})
}
