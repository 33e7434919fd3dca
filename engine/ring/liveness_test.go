package ring

import "testing"

// The silence limit with its adaptive terms: the RTT's variation (RFC
// 6298's RTO) and this device's own tick jitter (doc.go, "Silence").
func TestSilenceLimit(t *testing.T) {
	tests := []struct {
		name string
		in   Silence
		want int
	}{
		{"nothing measured", Silence{TickMs: 500}, 3},
		{"steady RTT: 4 × RTT", Silence{TickMs: 100, RTTMs: 80}, 4},
		{"varying RTT: RTT + 4 × RTTVAR beats 4 × RTT", Silence{TickMs: 100, RTTMs: 80, RTTVarMs: 100}, 5},
		{"small variation: 4 × RTT still", Silence{TickMs: 100, RTTMs: 80, RTTVarMs: 50}, 4},
		{"jitter adds 2 × its ticks on top of the floor", Silence{TickMs: 500, JitterMs: 400}, 5},
		{"jitter adds on top of the RTT", Silence{TickMs: 100, RTTMs: 80, JitterMs: 50}, 5},
		{"jitter adds on top of a gap", Silence{TickMs: 500, GapTicks: 3, JitterMs: 250}, 7},
		{"everything is capped", Silence{TickMs: 100, RTTMs: 200, RTTVarMs: 500, GapTicks: 4, JitterMs: 100}, SilenceCap},
		{"no tick length: ms terms are left out", Silence{RTTMs: 900, RTTVarMs: 900, JitterMs: 900, GapTicks: 2}, 4},
		{"negative inputs are none", Silence{TickMs: 100, RTTMs: -1, RTTVarMs: -5, GapTicks: -3, JitterMs: -7}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SilenceLimit(tt.in); got != tt.want {
				t.Errorf("SilenceLimit(%+v) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

// The round-trip estimate follows RFC 6298 in integer ms: the first sample
// sets RTT and half of it as the variation; later ones move them by 1/8
// and 1/4.
func TestRTTEstimate(t *testing.T) {
	var e rttEstimate
	for i, tc := range []struct{ sample, srtt, rttvar int }{
		{100, 100, 50},
		{100, 100, 37},  // (3×50 + 0)/4
		{500, 150, 127}, // (7×100 + 500 + 4)/8, (3×37 + 400)/4
		{100, 144, 107},
	} {
		e.add(tc.sample)
		if e.srtt != tc.srtt || e.rttvar != tc.rttvar {
			t.Fatalf("after sample %d (%d ms): srtt %d rttvar %d, want %d %d", i+1, tc.sample, e.srtt, e.rttvar, tc.srtt, tc.rttvar)
		}
	}
}

// How long a worker may hold an activation (doc.go, "Stalls").
func TestStallTicks(t *testing.T) {
	tests := []struct {
		name                     string
		tickMs, expectMs, jitter int
		want                     int
	}{
		{"nothing known", 500, 0, 0, StallUnknown},
		{"no tick length", 0, 100, 0, StallUnknown},
		{"a fast window: the margin", 500, 20, 0, 1 + StallMargin},
		{"4 × expected, rounded up", 100, 250, 0, 10 + StallMargin},
		{"a long prefill batch", 500, 30000, 0, 240 + StallMargin},
		{"jitter adds 2 × its ticks", 500, 20, 300, 1 + StallMargin + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StallTicks(tt.tickMs, tt.expectMs, tt.jitter); got != tt.want {
				t.Errorf("StallTicks(%d, %d, %d) = %d, want %d", tt.tickMs, tt.expectMs, tt.jitter, got, tt.want)
			}
		})
	}
}

// Expectations: a one-row pass at the decode time, a batch at its row
// rate, or at the decode rate per row when no row rate is known.
func TestExpectationMs(t *testing.T) {
	for _, tc := range []struct {
		e    Expectation
		rows int
		want int
	}{
		{Expectation{}, 1, 0},
		{Expectation{DecodeMs: 40}, 1, 40},
		{Expectation{DecodeMs: 40}, 8, 320},
		{Expectation{DecodeMs: 40, RowMs: 5}, 8, 40},
		{Expectation{RowMs: 5}, 1, 5},
	} {
		if got := tc.e.ms(tc.rows); got != tc.want {
			t.Errorf("%+v.ms(%d) = %d, want %d", tc.e, tc.rows, got, tc.want)
		}
	}
}
