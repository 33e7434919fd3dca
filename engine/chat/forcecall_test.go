package chat

import (
	"encoding/json"
	"errors"
	"testing"
)

// A forced call's parts, filled with JSON that follows its schema, are
// what the family's parser reads back as that one call.
func TestForceCallParsesBack(t *testing.T) {
	tools := []Tool{
		{Function: json.RawMessage(`{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}`)},
		{Function: json.RawMessage(`{"name":"get_time"}`)},
	}
	for _, tc := range []struct {
		fam  ToolFamily
		json string // a reply's JSON that follows the schema
	}{
		{Llama3, `{"name": "get_time", "parameters": {}}`},
		{Qwen25, `{"name": "get_time", "arguments": {}}`},
		{Qwen3, `{"name": "get_time", "arguments": {}}`},
		{Mistral, `[{"name": "get_time", "arguments": {}}]`},
		{MistralNemo, `[{"name": "get_time", "arguments": {}}]`},
	} {
		tt := ToolTemplate{Family: tc.fam}
		fc, err := tt.ForceCall(tools, "get_time")
		if err != nil {
			t.Fatalf("%s: %v", tc.fam, err)
		}
		var schema map[string]any
		if err := json.Unmarshal(fc.Schema, &schema); err != nil {
			t.Fatalf("%s: schema %s: %v", tc.fam, fc.Schema, err)
		}
		p := tt.Parser()
		content := p.Feed(fc.Before + tc.json + fc.After)
		rest, calls := p.Finish()
		if content+rest != "" || len(calls) != 1 || calls[0].Name != "get_time" || string(calls[0].Arguments) != "{}" {
			t.Errorf("%s: %q gives content %q, calls %+v; want one get_time call", tc.fam, fc.Before+tc.json+fc.After, content+rest, calls)
		}
	}
}

func TestForceCallSchema(t *testing.T) {
	tools := []Tool{
		{Function: json.RawMessage(`{"name":"a","parameters":{"type":"object","properties":{"x":{"type":"integer"}}}}`)},
		{Function: json.RawMessage(`{"name":"b"}`)},
	}
	tt := ToolTemplate{Family: Qwen25}
	one, err := tt.ForceCall(tools, "a")
	if want := `{"type":"object","properties":{"name":{"const":"a"},"arguments":{"type":"object","properties":{"x":{"type":"integer"}}}},"required":["name","arguments"],"additionalProperties":false}`; err != nil || string(one.Schema) != want {
		t.Errorf("named a: %s, %v; want %s", one.Schema, err, want)
	}
	any, err := tt.ForceCall(tools, "")
	if want := `{"anyOf":[` + string(one.Schema) + `,{"type":"object","properties":{"name":{"const":"b"},"arguments":{"type":"object"}},"required":["name","arguments"],"additionalProperties":false}]}`; err != nil || string(any.Schema) != want {
		t.Errorf("required: %s, %v; want %s", any.Schema, err, want)
	}
	if _, err := tt.ForceCall(tools, "c"); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("a call of c: %v, want ErrUnknownTool", err)
	}
	if _, err := (ToolTemplate{}).ForceCall(tools, ""); !errors.Is(err, ErrNoToolCalling) {
		t.Errorf("no family: %v, want ErrNoToolCalling", err)
	}
}
