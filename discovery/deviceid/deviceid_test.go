package deviceid

import (
	"crypto/sha256"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	id := ID(sha256.Sum256([]byte("some certificate bytes")))
	s := id.String()
	if len(s) != 63 || strings.Count(s, "-") != 7 {
		t.Fatalf("String() = %q, want 8 groups of 7", s)
	}
	for _, in := range []string{s, strings.ToLower(s), strings.ReplaceAll(s, "-", ""), id.Compact(), " " + s + " "} {
		got, err := Parse(in)
		if err != nil || got != id {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, id)
		}
	}
	if id.Short() != s[:7] {
		t.Errorf("Short() = %q, want %q", id.Short(), s[:7])
	}
	var back ID
	if b, _ := id.MarshalText(); back.UnmarshalText(b) != nil || back != id {
		t.Errorf("text round trip of %v = %v", id, back)
	}
	var zero ID
	if zero.String() != "" || zero.Short() != "" || !zero.IsZero() {
		t.Errorf("zero ID: String %q Short %q", zero.String(), zero.Short())
	}
	back = id
	if err := back.UnmarshalText(nil); err != nil || !back.IsZero() {
		t.Errorf("UnmarshalText(\"\") = %v, %v; want the zero ID", back, err)
	}
}

func TestParseErrors(t *testing.T) {
	id := ID(sha256.Sum256([]byte("x"))).String()
	typo := []byte(id)
	// Change one data character: the block's check character must catch it.
	if typo[0] == 'A' {
		typo[0] = 'B'
	} else {
		typo[0] = 'A'
	}
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"typo", string(typo), ErrCheck},
		{"short", id[:20], ErrLength},
		{"bad char", "1" + id[1:], ErrChars},
		{"empty", "", ErrLength},
		{"zero", ID{}.Compact(), ErrChars},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse(tt.in); !errors.Is(err, tt.want) {
				t.Errorf("Parse(%q) error = %v, want %v", tt.in, err, tt.want)
			}
		})
	}
}

func TestLuhn32EverySingleCharacterError(t *testing.T) {
	block := "MFZWI3DBONSGY"
	check := luhn32(block)
	for i := range len(block) {
		for _, c := range luhnAlphabet {
			if byte(c) == block[i] {
				continue
			}
			b := []byte(block)
			b[i] = byte(c)
			if luhn32(string(b)) == check {
				t.Fatalf("changing position %d to %c kept check %c", i, c, check)
			}
		}
	}
}

func TestForName(t *testing.T) {
	a, b := ForName("a"), ForName("b")
	if a == b || a.IsZero() || a != ForName("a") {
		t.Fatalf("ForName: a %v, b %v", a, b)
	}
	if got, err := Parse(a.String()); err != nil || got != a {
		t.Errorf("Parse(ForName(a)) = %v, %v", got, err)
	}
}

// Logs take the ID as it is: slog writes its readable text, as it wrote
// the string before (the text handler through MarshalText, the JSON one too).
func TestSlogWritesText(t *testing.T) {
	id := ForName("a")
	for _, tt := range []struct {
		name string
		h    func(w *strings.Builder) slog.Handler
		want string
	}{
		{"text", func(w *strings.Builder) slog.Handler { return slog.NewTextHandler(w, nil) }, "peer=" + id.String()},
		{"json", func(w *strings.Builder) slog.Handler { return slog.NewJSONHandler(w, nil) }, `"peer":"` + id.String() + `"`},
	} {
		var typed, text strings.Builder
		slog.New(tt.h(&typed)).Info("m", "peer", id)
		slog.New(tt.h(&text)).Info("m", "peer", id.String())
		if !strings.Contains(typed.String(), tt.want) {
			t.Errorf("%s: %q lacks %q", tt.name, typed.String(), tt.want)
		}
		if strings.Contains(text.String(), tt.want) != strings.Contains(typed.String(), tt.want) {
			t.Errorf("%s: typed %q, text %q", tt.name, typed.String(), text.String())
		}
	}
}
