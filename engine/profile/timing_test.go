package profile

import (
	"homering/internal/testdir"
	"math"
	"testing"
	"time"
)

// The profiler's short timings run on every OS and under Wine (build/
// windows.sh): with Go's clock, which steps by 1 ms under Wine, a layer
// step of this model and a loopback ping measured 0.

// TestShortTimingProbe: the layer probe of a small model (tens of µs per
// layer here) measures a time per layer above 0 that two runs agree on
// within a factor of 4; with a clock that steps by 1 ms most steps read 0
// and so does their median.
func TestShortTimingProbe(t *testing.T) {
	var secs []float64
	for range 2 {
		p, err := probeLayers(smallModel, 1, 1<<30, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("probe: %.2f µs per layer over %d layers", p.LayerSec*1e6, p.Layers)
		secs = append(secs, p.LayerSec)
	}
	for _, s := range secs {
		if s <= 0 || s >= 5e-3 {
			t.Fatalf("layer times %v s, want each in (0, 5 ms)", secs)
		}
	}
	if r := max(secs[0], secs[1]) / min(secs[0], secs[1]); r > 4 {
		t.Errorf("layer times %v s differ by a factor of %.1f", secs, r)
	}
}

// TestShortTimingLink: the median round trips of a loopback link (tens of
// µs) are above 0 and not whole milliseconds, as with a 1 ms clock they are.
func TestShortTimingLink(t *testing.T) {
	ctx, c := echoLink(t, func() string { return testdir.Scratch(t) })
	l, err := MeasureLink(ctx, c, "srv", LinkOptions{HiddenBytes: 4 * 2048})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("link: RTT %.1f µs, %d B in %.1f µs", l.RTTSec*1e6, l.HiddenBytes, l.HiddenRTTSec*1e6)
	for _, s := range []float64{l.RTTSec, l.HiddenRTTSec} {
		if d := time.Duration(math.Round(s * 1e9)); d <= 0 || d%time.Millisecond == 0 {
			t.Errorf("link round trips %v s and %v s: want above 0 and finer than 1 ms", l.RTTSec, l.HiddenRTTSec)
		}
	}
}
