package llama

import (
	"errors"
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
