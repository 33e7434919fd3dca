package llama

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestSchemaGrammar(t *testing.T) {
	g, err := SchemaGrammar([]byte(`{"type":"object","properties":{"a":{"enum":["x","y"]}},"required":["a"]}`))
	if err != nil || !strings.Contains(g, "root ::=") || !strings.Contains(g, `"\"a\""`) {
		t.Errorf("SchemaGrammar = %q, %v; want a grammar with a root rule and the key a", g, err)
	}
	for _, bad := range []string{`not json`, `{"type":"thing"}`, `{"$ref":"#/definitions/missing"}`, `{"type":"string","pattern":"abc"}`} {
		if g, err := SchemaGrammar([]byte(bad)); !errors.Is(err, ErrSchema) {
			t.Errorf("SchemaGrammar(%s) = %q, %v; want ErrSchema", bad, g, err)
		}
	}
}

func TestNewGrammarRefusesBadGBNF(t *testing.T) {
	v := loadVocab(t)
	for _, bad := range []string{`root ::= "unclosed`, `notroot ::= "x"`, ``} {
		if _, err := NewGrammar(v, bad); !errors.Is(err, ErrGrammar) {
			t.Errorf("NewGrammar(%q) = %v, want ErrGrammar", bad, err)
		}
	}
}

// allowed is which tokens g's mask leaves.
func allowed(g *Grammar, n int) map[int32]bool {
	l := make([]float32, n)
	g.Mask(l)
	out := map[int32]bool{}
	for i, x := range l {
		if !math.IsInf(float64(x), -1) {
			out[int32(i)] = true
		}
	}
	return out
}

// A grammar allows the tokens that continue it, refuses the others
// without changing, and allows the end of generation only once complete.
func TestGrammarFollowsTheVocabulary(t *testing.T) {
	v := loadVocab(t)
	g, err := NewGrammar(v, `root ::= "{" "}"`)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	piece := func(s string) int32 { // stories260K spells { and } with byte tokens only
		t.Helper()
		for i := range v.Size() {
			if p, _ := v.TokenToPiece(int32(i)); p == s {
				return int32(i)
			}
		}
		t.Fatalf("no token is %q", s)
		return 0
	}
	open, shut := piece("{"), piece("}")
	ok := allowed(g, v.Size())
	if !ok[open] || ok[shut] || ok[v.EOS()] || len(ok) != 1 {
		t.Errorf("at the start the mask allows %v; want only %d ({)", ok, open)
	}
	if g.Accept(shut) || g.Accept(v.EOS()) || g.Accept(-1) || g.Accept(int32(v.Size())) {
		t.Error("Accept took a token the grammar refuses")
	}
	if !g.Accept(open) || !g.Accept(shut) {
		t.Fatal("Accept refused { then }")
	}
	if ok := allowed(g, v.Size()+2); len(ok) != 1 || !ok[v.EOS()] {
		t.Errorf("complete, the mask allows %v; want only the end of generation %d", ok, v.EOS())
	}
	if !g.Accept(v.EOS()) {
		t.Error("complete, Accept refused the end of generation")
	}
}

// Control tokens are never text a grammar matches: <s> rendered as its
// text would otherwise fit a grammar (or a JSON string) asking for "<s>".
func TestGrammarRefusesControlTokens(t *testing.T) {
	v := loadVocab(t)
	g, err := NewGrammar(v, `root ::= "<s>"`)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if ok := allowed(g, v.Size()); ok[v.BOS()] || len(ok) == 0 {
		t.Errorf("the mask allows %v; want some text tokens and not <s> (%d)", ok, v.BOS())
	}
}

// BenchmarkGrammar times what a grammar costs a request: building it, one
// token's check (Accept, the common case) and a mask of the whole
// vocabulary (when the model's choice is refused), on stories260K's 512
// tokens and on the generated 1 GB model's 32000. Nearly all of a mask is
// llama.cpp's llama_grammar_apply_impl, which llama.cpp's own sampler runs
// the same way.
func BenchmarkGrammar(b *testing.B) {
	schema := `{"type":"object","properties":{"name":{"type":"string"},"mood":{"enum":["happy","sad"]}},"required":["name","mood"]}`
	gbnf, err := SchemaGrammar([]byte(schema))
	if err != nil {
		b.Fatal(err)
	}
	for _, path := range []string{stories260K, "../../testdata/models/llama-1g-Q8_0.gguf"} {
		v, err := LoadVocab(path)
		if err != nil {
			b.Skip(err)
		}
		defer v.Close()
		v.grammarVocab() // made once per model, not per request
		name := fmt.Sprintf("vocab=%d", v.Size())
		b.Run(name+"/new", func(b *testing.B) {
			for b.Loop() {
				g, err := NewGrammar(v, gbnf)
				if err != nil {
					b.Fatal(err)
				}
				if err := g.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
		g, err := NewGrammar(v, gbnf)
		if err != nil {
			b.Fatal(err)
		}
		defer g.Close()
		b.Run(name+"/check", func(b *testing.B) {
			for b.Loop() {
				if g.Accept(v.EOS()) { // refused: the grammar stays at its start
					b.Fatal("EOS accepted")
				}
			}
		})
		logits := make([]float32, v.Size())
		b.Run(name+"/mask", func(b *testing.B) {
			for b.Loop() {
				g.Mask(logits)
			}
		})
	}
}
