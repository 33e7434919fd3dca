package openai

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/app/api/apitype"
)

func ptr[T any](v T) *T { return &v }

func TestFromChat(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    apitype.ChatRequest
		wantErr string
	}{
		{"string content", `{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}],"temperature":0.5,"max_tokens":9,"seed":3}`,
			apitype.ChatRequest{Model: "m", Messages: []apitype.ChatMessage{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}},
				Temperature: ptr(0.5), MaxTokens: 9, Seed: ptr(int64(3))}, ""},
		{"text parts and developer role", `{"messages":[{"role":"developer","content":[{"type":"text","text":"A"},{"type":"text","text":"B"}]},{"role":"user","content":"x"}]}`,
			apitype.ChatRequest{Messages: []apitype.ChatMessage{{Role: "system", Content: "AB"}, {Role: "user", Content: "x"}}}, ""},
		{"max_completion_tokens wins", `{"messages":[{"role":"user","content":"x"}],"max_tokens":5,"max_completion_tokens":7}`,
			apitype.ChatRequest{Messages: []apitype.ChatMessage{{Role: "user", Content: "x"}}, MaxTokens: 7}, ""},
		{"image part refused", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, apitype.ChatRequest{}, `content part type "image_url" is not supported; send text parts only`},
		{"no messages", `{"messages":[]}`, apitype.ChatRequest{}, "messages is empty; send at least one message"},
		{"n > 1", `{"n":2,"messages":[{"role":"user","content":"x"}]}`, apitype.ChatRequest{}, "n=2 is not supported; ask for one choice"},
		{"tool without function", `{"tools":[{"type":"function"}],"messages":[{"role":"user","content":"x"}]}`, apitype.ChatRequest{},
			`tools[0] is not a function tool; send {"type": "function", "function": {"name": …, "parameters": …}}`},
		{"tools, a call and its result", `{"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"x"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"call_1","content":"ok"}]}`,
			apitype.ChatRequest{Tools: []apitype.Tool{{Function: `{"name":"f","parameters":{"type":"object"}}`}}, Messages: []apitype.ChatMessage{
				{Role: "user", Content: "x"}, {Role: "assistant", ToolCalls: []apitype.ToolCall{{ID: "call_1", Name: "f", Arguments: `{"a":1}`}}},
				{Role: "tool", Content: "ok", ToolCallID: "call_1"}}}, ""},
		{"tool_choice none leaves the tools out", `{"tool_choice":"none","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"x"}]}`,
			apitype.ChatRequest{Messages: []apitype.ChatMessage{{Role: "user", Content: "x"}}}, ""},
		{"tool_choice required forces a call", `{"tool_choice":"required","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"x"}]}`,
			apitype.ChatRequest{Messages: []apitype.ChatMessage{{Role: "user", Content: "x"}}, Tools: []apitype.Tool{{Function: `{"name":"f"}`}}, ForceCall: true}, ""},
		{"a named tool_choice forces its call", `{"tool_choice":{"type":"function","function":{"name":"g"}},"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}}],"messages":[{"role":"user","content":"x"}]}`,
			apitype.ChatRequest{Messages: []apitype.ChatMessage{{Role: "user", Content: "x"}}, Tools: []apitype.Tool{{Function: `{"name":"f"}`}, {Function: `{"name":"g"}`}}, ForceCall: true, ForceName: "g"}, ""},
		{"a named tool_choice not among the tools", `{"tool_choice":{"type":"function","function":{"name":"h"}},"tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"x"}]}`,
			apitype.ChatRequest{}, "tool_choice names the function h, which is not among the tools; name one of them"},
		{"tool_choice required without tools", `{"tool_choice":"required","messages":[{"role":"user","content":"x"}]}`,
			apitype.ChatRequest{}, "tool_choice asks for a tool call but tools is empty; send the tools the model may call"},
		{"tool_choice of another kind", `{"tool_choice":"sometimes","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"x"}]}`,
			apitype.ChatRequest{}, `tool_choice "sometimes" is not supported; send auto, none, required or {"type": "function", "function": {"name": …}}`},
		{"tool_choice required and a JSON response_format", `{"tool_choice":"required","response_format":{"type":"json_object"},"tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"x"}]}`,
			apitype.ChatRequest{}, `tool_choice "required" and a JSON response_format cannot both shape the reply; send one of them`},
		{"tool result without id", `{"messages":[{"role":"tool","content":"x"}]}`, apitype.ChatRequest{}, `message 0 has role tool without tool_call_id; send the id of the call it answers`},
		{"bad role", `{"messages":[{"role":"function","content":"x"}]}`, apitype.ChatRequest{}, `message 0 has role "function"; use system, user, assistant or tool`},
		{"temperature range", `{"temperature":3,"messages":[{"role":"user","content":"x"}]}`, apitype.ChatRequest{}, "temperature 3 is outside 0-2"},
		{"response_format text", `{"response_format":{"type":"text"},"messages":[{"role":"user","content":"x"}]}`,
			apitype.ChatRequest{Messages: []apitype.ChatMessage{{Role: "user", Content: "x"}}}, ""},
		{"json_object is any object", `{"response_format":{"type":"json_object"},"messages":[{"role":"user","content":"x"}]}`,
			apitype.ChatRequest{Messages: []apitype.ChatMessage{{Role: "user", Content: "x"}}, JSONSchema: `{"type":"object"}`}, ""},
		{"json_schema", `{"response_format":{"type":"json_schema","json_schema":{"name":"m","strict":true,"schema":{"type":"object","properties":{"a":{"type":"string"}}}}},"messages":[{"role":"user","content":"x"}]}`,
			apitype.ChatRequest{Messages: []apitype.ChatMessage{{Role: "user", Content: "x"}}, JSONSchema: `{"type":"object","properties":{"a":{"type":"string"}}}`}, ""},
		{"json_schema without a schema", `{"response_format":{"type":"json_schema","json_schema":{"name":"m"}},"messages":[{"role":"user","content":"x"}]}`,
			apitype.ChatRequest{}, "the response_format json_schema has no json_schema.schema; send the JSON schema the reply must follow"},
		{"json_schema that is no object", `{"response_format":{"type":"json_schema","json_schema":{"name":"m","schema":"object"}},"messages":[{"role":"user","content":"x"}]}`,
			apitype.ChatRequest{}, `the response_format json_schema.schema must be a JSON schema object, such as {"type":"object","properties":{…}}`},
		{"unknown response_format", `{"response_format":{"type":"yaml"},"messages":[{"role":"user","content":"x"}]}`,
			apitype.ChatRequest{}, `the response_format type "yaml" is not supported; use text, json_object or json_schema`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in ChatCompletionRequest
			if err := json.Unmarshal([]byte(tc.in), &in); err != nil {
				t.Fatal(err)
			}
			got, err := FromChat(in)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrRequest) || err.Error() != ErrRequest.Error()+": "+tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFromCompletion(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    apitype.ChatRequest
		wantErr bool
	}{
		{"string prompt, default 16 tokens", `{"prompt":"Once"}`, apitype.ChatRequest{Prompt: "Once", MaxTokens: 16}, false},
		{"array of one", `{"prompt":["Once"],"max_tokens":4}`, apitype.ChatRequest{Prompt: "Once", MaxTokens: 4}, false},
		{"array of two", `{"prompt":["a","b"]}`, apitype.ChatRequest{}, true},
		{"empty", `{"prompt":""}`, apitype.ChatRequest{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in CompletionRequest
			_ = json.Unmarshal([]byte(tc.in), &in)
			got, err := FromCompletion(in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestResponses(t *testing.T) {
	st := apitype.ChatStats{PromptTokens: 5, CompletionTokens: 3, StopReason: "length"}
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"first chunk carries the role", NewChunk("c1", "m", 7, "Hi", true),
			`{"id":"c1","object":"chat.completion.chunk","created":7,"model":"m","system_fingerprint":"homering","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}`},
		{"later chunk", NewChunk("c1", "m", 7, "!", false),
			`{"id":"c1","object":"chat.completion.chunk","created":7,"model":"m","system_fingerprint":"homering","choices":[{"index":0,"delta":{"content":"!"},"finish_reason":null}]}`},
		{"final chunk with usage", NewFinalChunk("c1", "m", 7, st, nil, true),
			`{"id":"c1","object":"chat.completion.chunk","created":7,"model":"m","system_fingerprint":"homering","choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`},
		{"completion", NewChatCompletion("c1", "m", 7, "Hi!", nil, apitype.ChatStats{PromptTokens: 1, CompletionTokens: 2, StopReason: "stop"}),
			`{"id":"c1","object":"chat.completion","created":7,"model":"m","system_fingerprint":"homering","choices":[{"index":0,"message":{"role":"assistant","content":"Hi!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`},
		{"text completion chunk", NewCompletion("x", "m", 7, "a", nil),
			`{"id":"x","object":"text_completion","created":7,"model":"m","choices":[{"index":0,"text":"a","logprobs":null,"finish_reason":null}]}`},
		{"models", Models([]apitype.ServedModel{{Name: "stories260K", Modified: 9}}),
			`{"object":"list","data":[{"id":"stories260K","object":"model","created":9,"owned_by":"homering"}]}`},
		{"no models is an empty list", Models(nil), `{"object":"list","data":[]}`},
		{"error", NewError("invalid_request_error", "No."), `{"error":{"message":"No.","type":"invalid_request_error","param":null,"code":null}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(b)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
