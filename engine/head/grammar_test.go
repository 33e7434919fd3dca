package head

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"testing"

	"homering/engine/llama"
	"homering/engine/sample"
)

// moodSchema is a small schema of structured output: an object with a
// required string and an enum. The string is bounded, so that a model
// that would write a story inside it still closes it.
const moodSchema = `{"type":"object","properties":{"name":{"type":"string","maxLength":12},"mood":{"enum":["happy","sad"]}},"required":["name","mood"],"additionalProperties":false}`

// mood is moodSchema's object.
type mood struct {
	Name *string `json:"name"`
	Mood string  `json:"mood"`
}

// checkMood says what is wrong with text as moodSchema's JSON, or nil.
func checkMood(text string) error {
	var m mood
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("text after the object")
	}
	if m.Name == nil || len([]rune(*m.Name)) > 12 || (m.Mood != "happy" && m.Mood != "sad") {
		return errors.New("does not match the schema")
	}
	return nil
}

func grammar(t testing.TB, h *Head, schema string) *llama.Grammar {
	t.Helper()
	gbnf, err := llama.SchemaGrammar([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	g, err := llama.NewGrammar(h.Vocab(), gbnf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// stories260K never writes JSON by itself; under a schema's grammar its
// greedy reply is JSON of that schema, ended by the model's end of
// generation once the object is complete, and so is a sampled one.
func TestGrammarConstrainsTheReply(t *testing.T) {
	h := open(t)
	free := generate(t, h, Request{Prompt: "Once upon a time", MaxTokens: 40})
	if json.Valid([]byte(free.Text)) {
		t.Fatalf("the model wrote JSON by itself (%q); the test proves nothing", free.Text)
	}
	for _, req := range []Request{
		{Prompt: "Once upon a time", MaxTokens: 200},
		{Prompt: "Lily was sad.", MaxTokens: 200, Sampling: sample.Params{Temperature: 1}, Seed: 3},
	} {
		req.Constraint = grammar(t, h, moodSchema)
		r := generate(t, h, req)
		if !r.EOG {
			t.Errorf("%q: the reply %q did not end with the model's end of generation", req.Prompt, r.Text)
		}
		if err := checkMood(r.Text); err != nil {
			t.Errorf("%q: the reply %q is not the schema's JSON: %v", req.Prompt, r.Text, err)
		}
	}
}

// refuser is a constraint that allows no token at all.
type refuser struct{ accepted, masked int }

func (r *refuser) Accept(int32) bool { r.accepted++; return false }
func (r *refuser) Mask(l []float32) {
	r.masked++
	for i := range l {
		l[i] = float32(math.Inf(-1))
	}
}

// A constraint that allows nothing ends the generation with
// ErrConstraint, never with a token it refused.
func TestConstraintThatAllowsNothing(t *testing.T) {
	h := open(t)
	c := &refuser{}
	var toks []Token
	err := h.Generate(context.Background(), Request{Prompt: "Once", MaxTokens: 8, Constraint: c},
		func(tok Token) error { toks = append(toks, tok); return nil })
	if !errors.Is(err, ErrConstraint) || len(toks) != 0 || c.masked != 1 {
		t.Errorf("Generate = %v after %d tokens and %d masks; want ErrConstraint before any token, one mask", err, len(toks), c.masked)
	}
}

// sampleNext asks the constraint about the model's own choice first and
// masks only when it refuses it.
func TestSampleNextMasksOnlyWhenRefused(t *testing.T) {
	smp, err := NewSampler(sample.Params{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	logits := []float32{0, 3, 1, 2}
	only := func(allowed ...int32) *allowList { return &allowList{allowed: allowed} }
	for _, tt := range []struct {
		c      *allowList
		want   int32
		masked bool
	}{
		{only(1, 2), 1, false}, // the argmax is allowed: no mask
		{only(0, 2), 2, true},  // the best allowed one
	} {
		got, err := sampleNext(smp, tt.c, slices.Clone(logits))
		if err != nil || got != tt.want || tt.c.masked != tt.masked || !slices.Equal(tt.c.accepted, []int32{tt.want}) {
			t.Errorf("allowed %v: token %d (%v), masked %v, accepted %v; want %d, masked %v", tt.c.allowed, got, err, tt.c.masked, tt.c.accepted, tt.want, tt.masked)
		}
	}
}

type allowList struct {
	allowed  []int32
	accepted []int32
	masked   bool
}

func (a *allowList) Accept(tok int32) bool {
	if !slices.Contains(a.allowed, tok) {
		return false
	}
	a.accepted = append(a.accepted, tok)
	return true
}

func (a *allowList) Mask(l []float32) {
	a.masked = true
	for i := range l {
		if !slices.Contains(a.allowed, int32(i)) {
			l[i] = float32(math.Inf(-1))
		}
	}
}
