//go:build !windows

package runner

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// moodSchema: an object with a required bounded string and an enum, which
// stories260K (it writes stories, never JSON) meets only under its grammar.
const moodSchema = `{"type":"object","properties":{"name":{"type":"string","maxLength":12},"mood":{"enum":["happy","sad"]}},"required":["name","mood"],"additionalProperties":false}`

func checkMood(t *testing.T, text string) {
	t.Helper()
	var m struct {
		Name *string `json:"name"`
		Mood string  `json:"mood"`
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil || dec.More() || m.Name == nil || (m.Mood != "happy" && m.Mood != "sad") {
		t.Errorf("the reply %q is not moodSchema's JSON (%v)", text, err)
	}
}

// A JSON schema in a generate constrains the reply on one device and on a
// ring alike (the ring head's loop is the single device's, engine/head.Run):
// the same greedy tokens, JSON of the schema, ended by the model. A schema
// or grammar the child cannot build is the request's error before the ring
// starts, and the child lives on.
func TestRingStructuredOutput(t *testing.T) {
	head, w1 := newDevice(t), newDevice(t)
	serveRing(t, w1, head)
	lp := LoadParams{Model: stories260K, NCtx: 256, Threads: 1}
	g := *greedy(200)
	g.Messages = []Message{{Role: "user", Content: "Who is sad?"}}
	g.JSONSchema = json.RawMessage(moodSchema)

	var want []int32
	var text strings.Builder
	single, err := head.sup.Generate(context.Background(), lp, g, func(tk Token) error {
		want = append(want, tk.ID)
		text.WriteString(tk.Text)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if single.Reason != ReasonStop {
		t.Errorf("single device: reason %q, want the model's stop once the object is complete", single.Reason)
	}
	checkMood(t, text.String())

	layers, nEmbd := modelShape(t, stories260K)
	rp := ringParams(evenPlan(1, layers, nEmbd, 1, head, w1), head, w1)
	got, st, err := ringTokens(t, head, lp, rp, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" || st.Reason != ReasonStop || len(st.Devices) != 2 {
		t.Errorf("ring: reason %q on %d devices; tokens (-single device +ring):\n%s", st.Reason, len(st.Devices), diff)
	}

	pid := head.sup.PID()
	for name, bad := range map[string]GenerateParams{
		"schema":  {JSONSchema: json.RawMessage(`{"type":"thing"}`)},
		"grammar": {Grammar: `root ::= "unclosed`},
		"both":    {Grammar: `root ::= "x"`, JSONSchema: json.RawMessage(`{}`)},
	} {
		b := g
		b.Grammar, b.JSONSchema = bad.Grammar, bad.JSONSchema
		var re *RequestError
		if _, err := head.sup.Generate(context.Background(), lp, b, func(Token) error { return nil }); !errors.As(err, &re) || re.Code != CodeBadRequest {
			t.Errorf("%s, one device: %v, want a bad_request RequestError", name, err)
		}
		toks, _, err := ringTokens(t, head, lp, rp, b, nil)
		if !errors.As(err, &re) || re.Code != CodeBadRequest || len(toks) != 0 {
			t.Errorf("%s, ring: %d tokens, %v; want a bad_request RequestError", name, len(toks), err)
		}
		if name == "schema" && !strings.HasPrefix(re.Text, "the JSON schema cannot be turned into a grammar;") {
			t.Errorf("bad schema: %q, want the sentence without package names", re.Text)
		}
	}
	if head.sup.PID() != pid {
		t.Error("a bad grammar restarted the child")
	}
}

// A forced tool call (here in Qwen's format): the literal text around the
// schema's JSON is written by the model, the JSON on one line, and the
// model stops once the last of it is written.
func TestGrammarForcedCall(t *testing.T) {
	d := newDevice(t)
	lp := LoadParams{Model: stories260K, NCtx: 256, Threads: 1}
	g := *greedy(200)
	g.Messages = []Message{{Role: "user", Content: "Who is sad?"}}
	g.JSONSchema = json.RawMessage(moodSchema)
	g.Call = &CallGrammar{Before: "<tool_call>\n\"x\\", After: "\n</tool_call>"}
	var text strings.Builder
	st, err := d.sup.Generate(context.Background(), lp, g, func(tk Token) error {
		text.WriteString(tk.Text)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	body, ok := strings.CutPrefix(text.String(), g.Call.Before)
	body, ok2 := strings.CutSuffix(body, g.Call.After)
	if !ok || !ok2 || st.Reason != ReasonStop || strings.ContainsAny(body, "\n\t") || strings.Contains(body, "  ") {
		t.Fatalf("reply %q (reason %q), want %q, moodSchema's JSON on one line, %q, then the model's stop", text.String(), st.Reason, g.Call.Before, g.Call.After)
	}
	checkMood(t, body)
}

func TestAsCallKeepsTheSchemaWhole(t *testing.T) {
	gbnf := "root ::= \"{\" space item \"}\"\nitem ::= \"root\"\nspace ::= | \" \" | \"\\n\"{1,2} [ \\t]{0,20}\n"
	want := "root ::= \"[\\\"a\\\\\\n\" schema-root \n" + "schema-root ::= \"{\" space item \"}\"\nitem ::= \"root\"\nspace ::= | \" \"\n"
	if got := asCall(gbnf, "[\"a\\\n", ""); got != want {
		t.Errorf("asCall:\n%s\nwant:\n%s", got, want)
	}
}
