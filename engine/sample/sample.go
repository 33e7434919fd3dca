package sample

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Params are the sampling settings. The zero value is greedy decoding.
type Params struct {
	Temperature   float32 // <= 0: greedy
	TopK          int     // 0: off
	TopP          float32 // 0 or >= 1: off
	MinP          float32 // 0: off
	RepeatPenalty float32 // 0 or 1: off; > 1 discourages repeats
	RepeatLastN   int     // how many recent tokens the penalty looks at
}

// Defaults are llama.cpp's defaults (common/common.h): temperature 0.8,
// top-k 40, top-p 0.95, min-p 0.05, no repeat penalty over the last 64.
func Defaults() Params {
	return Params{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1, RepeatLastN: 64}
}

// ErrParams is wrapped by every validation error.
var ErrParams = errors.New("sample: invalid sampling parameter")

// Validate returns one sentence per wrong field, wrapped around ErrParams.
func (p Params) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrParams}, args...)...))
	}
	isBad := func(f float32) bool { return math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) }
	if isBad(p.Temperature) || p.Temperature < 0 {
		bad("temperature %v must be 0 (greedy) or positive", p.Temperature)
	}
	if p.TopK < 0 {
		bad("top-k %d must be 0 (off) or positive", p.TopK)
	}
	if isBad(p.TopP) || p.TopP < 0 || p.TopP > 1 {
		bad("top-p %v must be between 0 and 1", p.TopP)
	}
	if isBad(p.MinP) || p.MinP < 0 || p.MinP > 1 {
		bad("min-p %v must be between 0 and 1", p.MinP)
	}
	if isBad(p.RepeatPenalty) || p.RepeatPenalty < 0 {
		bad("repeat penalty %v must be 0 or 1 (off) or positive", p.RepeatPenalty)
	}
	if p.RepeatLastN < 0 {
		bad("repeat window %d must be 0 or positive", p.RepeatLastN)
	}
	return errors.Join(errs...)
}

// ErrNoLogits is returned by Sample for an empty logit vector.
var ErrNoLogits = errors.New("sample: no logits to sample from")

// Sampler draws tokens. Not safe for concurrent use.
type Sampler struct {
	p      Params
	rng    *rand.Rand // nil only when greedy
	recent []int32    // last RepeatLastN accepted tokens, oldest first
	cands  []cand     // scratch, reused between calls
	counts map[int32]bool
}

type cand struct {
	id    int32
	logit float64
	p     float64
}

// New returns a Sampler. rng may be nil for greedy sampling (Temperature 0).
func New(p Params, rng *rand.Rand) (*Sampler, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if rng == nil && p.Temperature > 0 {
		return nil, fmt.Errorf("%w: sampling at temperature %v needs a random source", ErrParams, p.Temperature)
	}
	return &Sampler{p: p, rng: rng, counts: map[int32]bool{}}, nil
}

// Params returns the sampler's parameters.
func (s *Sampler) Params() Params { return s.p }

// Accept records a token as generated (or as prompt context), for the repeat
// penalty.
func (s *Sampler) Accept(tok int32) {
	n := s.p.RepeatLastN
	if n <= 0 || !s.penalising() {
		return
	}
	if len(s.recent) == n {
		copy(s.recent, s.recent[1:])
		s.recent = s.recent[:n-1]
	}
	s.recent = append(s.recent, tok)
}

// Reset forgets the accepted tokens.
func (s *Sampler) Reset() { s.recent = s.recent[:0] }

func (s *Sampler) penalising() bool { return s.p.RepeatPenalty != 0 && s.p.RepeatPenalty != 1 }

// Sample returns the next token for logits (one per vocabulary entry).
func (s *Sampler) Sample(logits []float32) (int32, error) {
	if len(logits) == 0 {
		return 0, ErrNoLogits
	}
	clear(s.counts)
	if s.penalising() {
		for _, t := range s.recent {
			s.counts[t] = true
		}
	}
	value := func(i int) float64 {
		l := float64(logits[i])
		if math.IsNaN(l) {
			return math.Inf(-1)
		}
		if len(s.counts) > 0 && s.counts[int32(i)] {
			if l <= 0 {
				l *= float64(s.p.RepeatPenalty)
			} else {
				l /= float64(s.p.RepeatPenalty)
			}
		}
		return l
	}
	if s.p.Temperature <= 0 {
		best, bestV := 0, value(0)
		for i := 1; i < len(logits); i++ {
			if v := value(i); v > bestV { // strict: the lowest id wins ties
				best, bestV = i, v
			}
		}
		return int32(best), nil
	}

	c := s.cands[:0]
	for i := range logits {
		c = append(c, cand{id: int32(i), logit: value(i)})
	}
	c = topK(c, s.p.TopK)
	c = topP(c, s.p.TopP)
	c = minP(c, s.p.MinP)
	for i := range c {
		c[i].logit /= float64(s.p.Temperature)
	}
	softmax(c)
	s.cands = c
	r := s.rng.Float64()
	var sum float64
	for _, x := range c {
		sum += x.p
		if r < sum {
			return x.id, nil
		}
	}
	return c[len(c)-1].id, nil // r landed in the rounding gap at the top
}

// byRank orders candidates by falling logit, then rising id.
func byRank(a, b cand) int {
	if a.logit != b.logit {
		return cmp.Compare(b.logit, a.logit)
	}
	return cmp.Compare(a.id, b.id)
}

// topK sorts c by rank and keeps the first k (all if k is 0 or too big).
// When k is small it selects before sorting: a vocabulary is 32k-150k entries.
func topK(c []cand, k int) []cand {
	if k <= 0 || k >= len(c) || k > 256 {
		slices.SortFunc(c, byRank)
		if k > 0 && k < len(c) {
			return c[:k]
		}
		return c
	}
	// Keep the k best seen so far in c[:k], tracking the worst of them.
	slices.SortFunc(c[:k], byRank)
	for i := k; i < len(c); i++ {
		if x := c[i]; byRank(x, c[k-1]) < 0 {
			j, _ := slices.BinarySearchFunc(c[:k-1], x, byRank)
			copy(c[j+1:k], c[j:k-1])
			c[j] = x
		}
	}
	return c[:k]
}

// softmax fills p from logit; c must be sorted by rank (c[0] is the maximum).
func softmax(c []cand) {
	m := c[0].logit
	var sum float64
	for i := range c {
		c[i].p = math.Exp(c[i].logit - m)
		sum += c[i].p
	}
	for i := range c {
		c[i].p /= sum
	}
}

func topP(c []cand, p float32) []cand {
	if p <= 0 || p >= 1 {
		return c
	}
	softmax(c)
	var cum float64
	for i := range c {
		cum += c[i].p
		if cum >= float64(p) {
			return c[:i+1]
		}
	}
	return c
}

func minP(c []cand, p float32) []cand {
	if p <= 0 {
		return c
	}
	// p_i >= p * p_max  <=>  logit_i >= logit_max + ln p
	limit := c[0].logit + math.Log(float64(p))
	for i := 1; i < len(c); i++ {
		if c[i].logit < limit {
			return c[:i]
		}
	}
	return c
}
