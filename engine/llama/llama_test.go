package llama

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/engine/chat"
)

// stories260K is a real trained llama (SentencePiece vocab of 512, 5 layers,
// F32, no chat template) shared by the project.
const stories260K = "../../../shared/models/stories260K.gguf"

func loadVocab(t *testing.T) *Vocab {
	t.Helper()
	v, err := LoadVocab(stories260K)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

func TestVocabBasics(t *testing.T) {
	v := loadVocab(t)
	got := struct {
		Size     int
		BOS, EOS int32
		AddBOS   bool
		EOSIsEOG bool
		BOSIsEOG bool
		Template string
	}{v.Size(), v.BOS(), v.EOS(), v.AddBOS(), v.IsEOG(v.EOS()), v.IsEOG(v.BOS()), v.ChatTemplate()}
	want := got
	// SentencePiece llama conventions: <unk>=0, <s>=1, </s>=2, BOS added.
	want.Size, want.BOS, want.EOS, want.AddBOS, want.EOSIsEOG, want.BOSIsEOG, want.Template = 512, 1, 2, true, true, false, ""
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("vocab (-want +got):\n%s", diff)
	}
	if v.IsEOG(-1) || v.IsEOG(512) {
		t.Error("ids outside the vocabulary reported as EOG")
	}
}

func TestTokenizeRoundTrip(t *testing.T) {
	v := loadVocab(t)
	corpus := []string{
		"Once upon a time",
		"Once upon a time, there was a little girl named Lily.",
		"  leading and trailing spaces  ",
		"tabs\tand\nnewlines\n\n",
		"numbers 0 1 42 3.14159 -7 1,000,000",
		"unicode: ü é ß 日本語 😀 ∑",
		"",
	}
	for _, text := range corpus {
		t.Run(text, func(t *testing.T) {
			toks, err := v.Tokenize(text, true, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(toks) == 0 || toks[0] != v.BOS() {
				t.Fatalf("tokens %v do not start with BOS %d", toks, v.BOS())
			}
			for _, tok := range toks {
				if tok < 0 || int(tok) >= v.Size() {
					t.Fatalf("token %d outside the vocabulary", tok)
				}
			}
			got, err := v.Detokenize(toks, true, false)
			if err != nil {
				t.Fatal(err)
			}
			// SentencePiece adds a space before the first word; llama.cpp's
			// detokenizer keeps it for this vocabulary.
			want := text
			if text != "" {
				want = " " + text
			}
			if got != want {
				t.Errorf("Detokenize(Tokenize(%q)) = %q, want %q", text, got, want)
			}
			var pieces string
			for _, tok := range toks[1:] {
				p, err := v.TokenToPiece(tok)
				if err != nil {
					t.Fatal(err)
				}
				pieces += p
			}
			if pieces != want {
				t.Errorf("concatenated pieces = %q, want %q", pieces, want)
			}
		})
	}
}

func TestTokenRangeChecked(t *testing.T) {
	v := loadVocab(t)
	for _, tok := range []int32{-1, 512, math.MaxInt32} {
		if _, err := v.TokenToPiece(tok); !errors.Is(err, ErrTokenRange) {
			t.Errorf("TokenToPiece(%d) err = %v, want ErrTokenRange", tok, err)
		}
		if _, err := v.Detokenize([]int32{1, tok}, false, false); !errors.Is(err, ErrTokenRange) {
			t.Errorf("Detokenize(%d) err = %v, want ErrTokenRange", tok, err)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	for _, path := range []string{"testdata/does-not-exist.gguf", "."} {
		if _, err := LoadVocab(path); !errors.Is(err, ErrLoad) {
			t.Errorf("LoadVocab(%q) err = %v, want ErrLoad", path, err)
		}
	}
}

func TestChatMLMatchesLlamaCpp(t *testing.T) {
	convs := [][]chat.Message{
		{{Role: "user", Content: "Hi"}},
		{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "2+2?"}, {Role: "assistant", Content: "4"}, {Role: "user", Content: "and 3+3?"}},
		{{Role: "user", Content: "a\n\nb ü 日本 " + string(make([]byte, 0))}},
	}
	for _, msgs := range convs {
		for _, addAss := range []bool{false, true} {
			want, err := Template{Source: "chatml"}.Format(msgs, addAss)
			if err != nil {
				t.Fatal(err)
			}
			got, err := chat.ChatML{}.Format(msgs, addAss)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("chat.ChatML vs llama.cpp chatml (-llama.cpp +ours):\n%s", diff)
			}
		}
	}
}

func TestTemplates(t *testing.T) {
	msgs := []chat.Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U"}}
	tests := []struct {
		name    string
		source  string
		want    string
		wantErr error
	}{
		{
			name:   "a GGUF's Jinja ChatML template is recognised",
			source: "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
			want:   "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n",
		},
		{
			name:   "llama3 by name",
			source: "llama3",
			want:   "<|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nU<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
		},
		{name: "unknown template", source: "{{ nothing llama.cpp knows }}", wantErr: ErrUnknownTemplate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Template{Source: tt.source}.Format(msgs, true)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Format (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := (Template{Source: "chatml"}).Format(nil, true); !errors.Is(err, chat.ErrNoMessages) {
		t.Errorf("empty conversation err = %v", err)
	}
}

func TestFormatterFallsBackToChatML(t *testing.T) {
	v := loadVocab(t)
	if got := v.Formatter().Name(); got != "chatml" {
		t.Errorf("stories260K (no template) formatter = %q, want chatml", got)
	}
}

func TestReference(t *testing.T) {
	r, err := NewReference(stories260K, ReferenceParams{NCtx: 128, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.NCtx() != 256 {
		t.Errorf("NCtx = %d, want 128 padded to 256", r.NCtx())
	}
	toks, err := r.Vocab().Tokenize("Once upon a time, there was", true, false)
	if err != nil {
		t.Fatal(err)
	}
	all, err := r.Logits(toks, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(toks) {
		t.Fatalf("got logits for %d tokens, want %d", len(all), len(toks))
	}
	for i, l := range all {
		if len(l) != 512 {
			t.Fatalf("token %d: %d logits, want 512", i, len(l))
		}
	}
	// Re-evaluating the last token after truncating the cache gives the same
	// logits as the batch did for it, and the same bits again after a clear.
	n := len(toks)
	r.KVTruncate(n - 1)
	last, err := r.LastLogits(toks[n-1:], n-1)
	if err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(all[n-1], last); d > 1e-5 {
		t.Errorf("truncate + re-eval differs from the batch by %g", d)
	}
	r.KVClear()
	again, err := r.Logits(toks, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(all, again); diff != "" {
		t.Errorf("evaluation after KVClear differs (-first +second):\n%s", diff)
	}
	if _, err := r.Logits([]int32{1, 9999}, n); !errors.Is(err, ErrTokenRange) {
		t.Errorf("out-of-range token err = %v", err)
	}
	if _, err := r.Logits(toks, 250); !errors.Is(err, ErrContextFull) {
		t.Errorf("past the context err = %v", err)
	}
}

func maxAbsDiff(a, b []float32) float64 {
	var m float64
	for i := range a {
		m = max(m, math.Abs(float64(a[i]-b[i])))
	}
	return m
}
