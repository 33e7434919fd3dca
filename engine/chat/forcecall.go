package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ForcedCall is how a reply is made to be a tool call (OpenAI's
// tool_choice "required" or a named function): the reply is Before, then
// JSON that follows Schema, then After, in the family's own call format,
// so that the family's ToolParser reads it back as a call. The engine
// turns the three into one grammar.
type ForcedCall struct {
	Before string
	Schema json.RawMessage
	After  string
}

// ErrUnknownTool is a forced call of a function that is not among the
// request's tools.
var ErrUnknownTool = errors.New("chat: the function to call is not among the tools")

// ForceCall returns the grammar parts of one call of one of tools, or of
// the tool named name when name is not "". Each tool's parameters (its
// JSON schema; any object when it has none) constrain its arguments.
func (t ToolTemplate) ForceCall(tools []Tool, name string) (ForcedCall, error) {
	if t.Family == NoTools {
		return ForcedCall{}, ErrNoToolCalling
	}
	// The family's key for the arguments, and the call as the template
	// writes it: name first, as the models learnt it (a Go map would sort
	// the keys).
	argsKey := "arguments"
	if t.Family == Llama3 {
		argsKey = "parameters"
	}
	var alts []string
	for _, tool := range tools {
		var f struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		}
		if err := json.Unmarshal(tool.Function, &f); err != nil || f.Name == "" {
			return ForcedCall{}, fmt.Errorf("chat: a tool's function has no name")
		}
		if name != "" && f.Name != name {
			continue
		}
		params := strings.TrimSpace(string(f.Parameters))
		if params == "" || params == "null" {
			params = `{"type":"object"}`
		}
		n, _ := json.Marshal(f.Name)
		alts = append(alts, `{"type":"object","properties":{"name":{"const":`+string(n)+`},"`+argsKey+`":`+params+`},"required":["name","`+argsKey+`"],"additionalProperties":false}`)
	}
	if len(alts) == 0 {
		return ForcedCall{}, ErrUnknownTool
	}
	call := alts[0]
	if len(alts) > 1 {
		call = `{"anyOf":[` + strings.Join(alts, ",") + `]}`
	}
	switch t.Family {
	case Qwen25, Qwen3:
		return ForcedCall{Before: "<tool_call>\n", Schema: json.RawMessage(call), After: "\n</tool_call>"}, nil
	case Mistral:
		return ForcedCall{Before: "[TOOL_CALLS] ", Schema: json.RawMessage(`{"type":"array","items":` + call + `,"minItems":1,"maxItems":1}`)}, nil
	case MistralNemo:
		return ForcedCall{Before: "[TOOL_CALLS]", Schema: json.RawMessage(`{"type":"array","items":` + call + `,"minItems":1,"maxItems":1}`)}, nil
	}
	return ForcedCall{Schema: json.RawMessage(call)}, nil // Llama 3: the call is the reply's one JSON object
}
