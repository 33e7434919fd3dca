package sample

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

func mustNew(t *testing.T, p Params, seed uint64) *Sampler {
	t.Helper()
	s, err := New(p, rng(seed))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGreedy(t *testing.T) {
	tests := []struct {
		name    string
		logits  []float32
		history []int32
		p       Params
		want    int32
	}{
		{name: "argmax", logits: []float32{0.1, 2, -3, 1.9}, want: 1},
		{name: "ties go to the lowest id", logits: []float32{1, 3, 3, 2}, want: 1},
		{name: "all equal", logits: []float32{5, 5, 5}, want: 0},
		{name: "negative logits", logits: []float32{-5, -1, -2}, want: 1},
		{name: "NaN never wins", logits: []float32{float32(math.NaN()), -1, -2}, want: 1},
		{name: "+Inf wins", logits: []float32{1, float32(math.Inf(1)), 2}, want: 1},
		{
			name: "repeat penalty divides a positive logit", logits: []float32{2, 1.9, -1}, history: []int32{0},
			p: Params{RepeatPenalty: 1.5, RepeatLastN: 4}, want: 1, // 2/1.5 = 1.33 < 1.9
		},
		{
			name: "repeat penalty multiplies a negative logit", logits: []float32{-1, -1.2}, history: []int32{0},
			p: Params{RepeatPenalty: 1.5, RepeatLastN: 4}, want: 1, // -1*1.5 = -1.5 < -1.2
		},
		{
			name: "a repeated token is penalised once", logits: []float32{2, 1.2}, history: []int32{0, 0, 0},
			p: Params{RepeatPenalty: 1.5, RepeatLastN: 4}, want: 0, // 2/1.5 = 1.33 > 1.2
		},
		{
			name: "only the last RepeatLastN tokens count", logits: []float32{2, 1.9, 0, 0}, history: []int32{0, 2, 3},
			p: Params{RepeatPenalty: 1.5, RepeatLastN: 2}, want: 0,
		},
		{
			name: "penalty 1 is off", logits: []float32{2, 1.9}, history: []int32{0},
			p: Params{RepeatPenalty: 1, RepeatLastN: 4}, want: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.p, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range tt.history {
				s.Accept(h)
			}
			in := append([]float32(nil), tt.logits...)
			got, err := s.Sample(in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Sample = %d, want %d", got, tt.want)
			}
			if diff := cmp.Diff(tt.logits, in, cmp.Comparer(sameFloat)); diff != "" {
				t.Errorf("Sample changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

func sameFloat(a, b float32) bool { return a == b || (a != a && b != b) }

// randomLogits returns n logits with a spread like a real model's.
func randomLogits(r *rand.Rand, n int) []float32 {
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(r.NormFloat64() * 3)
	}
	return l
}

func argmax(l []float32) int32 {
	best := 0
	for i, v := range l {
		if v > l[best] {
			best = i
		}
	}
	return int32(best)
}

func TestTruncationsThatAreGreedy(t *testing.T) {
	tests := []struct {
		name string
		p    Params
	}{
		{"top-k 1", Params{Temperature: 1.5, TopK: 1}},
		{"top-p tiny", Params{Temperature: 1.5, TopP: 1e-9}},
		{"min-p 1", Params{Temperature: 1.5, MinP: 1}},
		{"top-k 1 with everything else", Params{Temperature: 0.7, TopK: 1, TopP: 0.9, MinP: 0.05}},
	}
	r := rng(7)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNew(t, tt.p, 1)
			for range 200 {
				l := randomLogits(r, 1000)
				got, err := s.Sample(l)
				if err != nil {
					t.Fatal(err)
				}
				if want := argmax(l); got != want {
					t.Fatalf("Sample = %d, want greedy %d", got, want)
				}
			}
		})
	}
}

func TestSeedReproduces(t *testing.T) {
	l := randomLogits(rng(3), 5000)
	draw := func(seed uint64) []int32 {
		s := mustNew(t, Defaults(), seed)
		var out []int32
		for range 50 {
			tok, err := s.Sample(l)
			if err != nil {
				t.Fatal(err)
			}
			s.Accept(tok)
			out = append(out, tok)
		}
		return out
	}
	if diff := cmp.Diff(draw(42), draw(42)); diff != "" {
		t.Errorf("same seed, different tokens (-first +second):\n%s", diff)
	}
	if cmp.Equal(draw(42), draw(43)) {
		t.Error("seeds 42 and 43 drew the same 50 tokens")
	}
}

// softmaxOf returns softmax(l / temp) over the ids in keep (all if nil).
func softmaxOf(l []float64, temp float64, keep []int) map[int]float64 {
	if keep == nil {
		for i := range l {
			keep = append(keep, i)
		}
	}
	m := math.Inf(-1)
	for _, i := range keep {
		m = max(m, l[i]/temp)
	}
	out := map[int]float64{}
	var sum float64
	for _, i := range keep {
		out[i] = math.Exp(l[i]/temp - m)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

func TestDistributions(t *testing.T) {
	// probabilities at temperature 1: 0.5, 0.3, 0.15, 0.05
	l := []float64{math.Log(0.5), math.Log(0.3), math.Log(0.15), math.Log(0.05)}
	tests := []struct {
		name string
		p    Params
		want map[int]float64
	}{
		{"temperature 1", Params{Temperature: 1}, softmaxOf(l, 1, nil)},
		{"temperature 2 flattens", Params{Temperature: 2}, softmaxOf(l, 2, nil)},
		{"temperature 0.5 sharpens", Params{Temperature: 0.5}, softmaxOf(l, 0.5, nil)},
		{"top-k 2", Params{Temperature: 1, TopK: 2}, softmaxOf(l, 1, []int{0, 1})},
		{"top-p 0.7 keeps 0.5+0.3", Params{Temperature: 1, TopP: 0.7}, softmaxOf(l, 1, []int{0, 1})},
		{"top-p 0.85 keeps three", Params{Temperature: 1, TopP: 0.85}, softmaxOf(l, 1, []int{0, 1, 2})},
		{"min-p 0.2 drops p < 0.1", Params{Temperature: 1, MinP: 0.2}, softmaxOf(l, 1, []int{0, 1, 2})},
		{"top-p before temperature", Params{Temperature: 2, TopP: 0.7}, softmaxOf(l, 2, []int{0, 1})},
	}
	logits := make([]float32, len(l))
	for i := range l {
		logits[i] = float32(l[i])
	}
	const n = 40000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNew(t, tt.p, 99)
			counts := map[int]int{}
			for range n {
				tok, err := s.Sample(logits)
				if err != nil {
					t.Fatal(err)
				}
				counts[int(tok)]++
			}
			for i := range l {
				got := float64(counts[i]) / n
				want := tt.want[i]
				// 4 standard deviations of a binomial proportion, at least 0.005.
				tol := max(4*math.Sqrt(want*(1-want)/n), 0.005)
				if want == 0 && counts[i] != 0 {
					t.Errorf("token %d drawn %d times, should be cut", i, counts[i])
				} else if math.Abs(got-want) > tol {
					t.Errorf("token %d: frequency %.4f, want %.4f ± %.4f", i, got, want, tol)
				}
			}
		})
	}
}

func TestTopKSelectsLikeASort(t *testing.T) {
	r := rng(11)
	for _, k := range []int{1, 2, 5, 40, 300} {
		for range 20 {
			l := randomLogits(r, 2000)
			// duplicate some values so that ties are exercised
			for i := 0; i < 200; i++ {
				l[r.IntN(len(l))] = l[r.IntN(len(l))]
			}
			var a, b []cand
			for i, v := range l {
				a = append(a, cand{id: int32(i), logit: float64(v)})
			}
			b = append(b, a...)
			got := topK(a, k)
			want := topK(b, 0)[:k]
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(cand{})); diff != "" {
				t.Fatalf("k=%d (-sorted +selected):\n%s", k, diff)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	nan := float32(math.NaN())
	tests := []struct {
		name string
		p    Params
		bad  int // how many fields are wrong
	}{
		{"zero is greedy", Params{}, 0},
		{"defaults", Defaults(), 0},
		{"negative temperature", Params{Temperature: -1}, 1},
		{"NaN temperature", Params{Temperature: nan}, 1},
		{"everything wrong", Params{Temperature: -1, TopK: -1, TopP: 2, MinP: -0.1, RepeatPenalty: -1, RepeatLastN: -1}, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			var joined interface{ Unwrap() []error }
			got := 0
			if errors.As(err, &joined) {
				got = len(joined.Unwrap())
			}
			if got != tt.bad {
				t.Errorf("Validate() = %v: %d errors, want %d", err, got, tt.bad)
			}
			if tt.bad > 0 && !errors.Is(err, ErrParams) {
				t.Errorf("error %v does not wrap ErrParams", err)
			}
		})
	}
	if _, err := New(Params{Temperature: 1}, nil); !errors.Is(err, ErrParams) {
		t.Errorf("New without rng at temperature 1: err = %v", err)
	}
	s, _ := New(Params{}, nil)
	if _, err := s.Sample(nil); !errors.Is(err, ErrNoLogits) {
		t.Errorf("Sample(nil) err = %v", err)
	}
}

func BenchmarkSampleDefaults32k(b *testing.B) {
	l := randomLogits(rng(1), 32000)
	s, _ := New(Defaults(), rng(2))
	for b.Loop() {
		if _, err := s.Sample(l); err != nil {
			b.Fatal(err)
		}
	}
}
