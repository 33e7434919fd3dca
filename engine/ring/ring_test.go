package ring

import (
	"testing"
)

// Loss detection: silent for max(3 ticks, 4 × RTT) (DESIGN §7; thesis §4.3).
func TestSilenceTicks(t *testing.T) {
	tests := []struct {
		name          string
		tickMs, rttMs int
		want          int
	}{
		{"no RTT measured yet", 500, 0, 3},
		{"fast LAN: 3 ticks dominate", 500, 2, 3},
		{"4×RTT exactly 3 ticks", 100, 75, 3},
		{"4×RTT above 3 ticks", 100, 80, 4},
		{"rounded up", 100, 101, 5},
		{"slow link", 250, 400, 7},
		{"no tick length", 0, 400, 3},
		{"negative RTT", 100, -5, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SilenceTicks(tt.tickMs, tt.rttMs); got != tt.want {
				t.Errorf("SilenceTicks(%d, %d) = %d, want %d", tt.tickMs, tt.rttMs, got, tt.want)
			}
		})
	}
}

// A join is adopted only when the predicted cost drops below 0.95 × current
// (thesis τ = 0.95; papers-digest §5.2 point 12).
func TestAdopt(t *testing.T) {
	tests := []struct {
		name               string
		current, candidate float64
		want               bool
	}{
		{"clear gain", 100, 80, true},
		{"just under the threshold", 100, 94.99, true},
		{"exactly 0.95", 100, 95, false},
		{"small gain", 100, 97, false},
		{"worse", 100, 120, false},
		{"no current cost", 0, 10, false},
		{"no candidate cost", 100, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Adopt(tt.current, tt.candidate); got != tt.want {
				t.Errorf("Adopt(%v, %v) = %v, want %v", tt.current, tt.candidate, got, tt.want)
			}
		})
	}
}
