package ring

import (
	"testing"
)

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
