package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/app/api/apitype"
)

func TestFromMessages(t *testing.T) {
	temp := 0.2
	for _, tc := range []struct {
		name    string
		in      string
		want    apitype.ChatRequest
		wantErr string
	}{
		{"strings", `{"model":"m","max_tokens":10,"system":"Be kind.","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"},{"role":"user","content":"More"}],"temperature":0.2}`,
			apitype.ChatRequest{Model: "m", System: "Be kind.", MaxTokens: 10, Temperature: &temp, Messages: []apitype.ChatMessage{
				{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello"}, {Role: "user", Content: "More"}}}, ""},
		{"blocks", `{"max_tokens":5,"system":[{"type":"text","text":"S"}],"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`,
			apitype.ChatRequest{System: "S", MaxTokens: 5, Messages: []apitype.ChatMessage{{Role: "user", Content: "ab"}}}, ""},
		{"max_tokens required", `{"messages":[{"role":"user","content":"x"}]}`, apitype.ChatRequest{}, "anthropic: invalid request: max_tokens must be a positive number"},
		{"system role refused", `{"max_tokens":1,"messages":[{"role":"system","content":"x"}]}`, apitype.ChatRequest{},
			`anthropic: invalid request: message 0 has role "system"; use user or assistant (system goes in the system field)`},
		{"image refused", `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"image"}]}]}`, apitype.ChatRequest{},
			`anthropic: invalid request: content block type "image" is not supported in a user message; send text blocks, tool_use in assistant messages and tool_result in user messages`},
		{"temperature above 1", `{"max_tokens":1,"temperature":1.5,"messages":[{"role":"user","content":"x"}]}`, apitype.ChatRequest{},
			"anthropic: invalid request: temperature 1.5 is outside 0-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in MessagesRequest
			if err := json.Unmarshal([]byte(tc.in), &in); err != nil {
				t.Fatal(err)
			}
			got, err := FromMessages(in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
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

// TestStreamSequence checks the event names and bodies of a two-token
// stream against Anthropic's documented sequence.
func TestStreamSequence(t *testing.T) {
	var evs []Event
	evs = append(evs, Start("msg_1", "m", 0)...)
	evs = append(evs, Delta("Hel"), Delta("lo"))
	evs = append(evs, Stop(apitype.ChatStats{PromptTokens: 4, CompletionTokens: 2, StopReason: "stop"}, nil, 8)...)
	var got []string
	for _, e := range evs {
		b, err := json.Marshal(e.Data)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Name+" "+string(b))
	}
	want := []string{
		`message_start {"message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}},"type":"message_start"}`,
		`content_block_start {"content_block":{"type":"text","text":""},"index":0,"type":"content_block_start"}`,
		`ping {"type":"ping"}`,
		`content_block_delta {"delta":{"text":"Hel","type":"text_delta"},"index":0,"type":"content_block_delta"}`,
		`content_block_delta {"delta":{"text":"lo","type":"text_delta"},"index":0,"type":"content_block_delta"}`,
		`content_block_stop {"index":0,"type":"content_block_stop"}`,
		`message_delta {"delta":{"stop_reason":"end_turn","stop_sequence":null},"type":"message_delta","usage":{"input_tokens":4,"output_tokens":2}}`,
		`message_stop {"type":"message_stop"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestNewResponse(t *testing.T) {
	b, _ := json.Marshal(NewResponse("msg_1", "m", "Hi", nil, apitype.ChatStats{PromptTokens: 3, CompletionTokens: 1, StopReason: "length"}, 1))
	want := `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hi"}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestStopReason: a reply cut by max_tokens says max_tokens; one cut
// earlier by the full context says model_context_window_exceeded, as
// Anthropic's API does, so a client sees why its answer is short.
func TestStopReason(t *testing.T) {
	for _, tc := range []struct {
		st        apitype.ChatStats
		maxTokens int
		want      string
	}{
		{apitype.ChatStats{CompletionTokens: 3, StopReason: "stop"}, 8, "end_turn"},
		{apitype.ChatStats{CompletionTokens: 8, StopReason: "length"}, 8, "max_tokens"},
		{apitype.ChatStats{CompletionTokens: 5, StopReason: "length"}, 8, "model_context_window_exceeded"},
		{apitype.ChatStats{CompletionTokens: 2, StopReason: "cancelled"}, 8, "end_turn"},
	} {
		if got := StopReason(tc.st, tc.maxTokens); got != tc.want {
			t.Errorf("StopReason(%+v, %d) = %q, want %q", tc.st, tc.maxTokens, got, tc.want)
		}
	}
}

func TestToolUse(t *testing.T) {
	var r MessagesRequest
	if err := json.Unmarshal([]byte(`{"max_tokens":9,"tools":[{"name":"f","description":"D","input_schema":{"type":"object"}}],"messages":[`+
		`{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"text","text":"Let me see."},{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}]},`+
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"ok"}]},{"type":"text","text":"and?"}]}]}`), &r); err != nil {
		t.Fatal(err)
	}
	got, err := FromMessages(r)
	if err != nil {
		t.Fatal(err)
	}
	want := apitype.ChatRequest{MaxTokens: 9, Tools: []apitype.Tool{{Function: `{"name":"f","description":"D","parameters":{"type":"object"}}`}},
		Messages: []apitype.ChatMessage{{Role: "user", Content: "x"},
			{Role: "assistant", Content: "Let me see.", ToolCalls: []apitype.ToolCall{{ID: "toolu_1", Name: "f", Arguments: `{"a":1}`}}},
			{Role: "tool", Content: "ok", ToolCallID: "toolu_1"}, {Role: "user", Content: "and?"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	calls := []apitype.ToolCall{{ID: "call_x", Name: "f", Arguments: `{"a":1}`}}
	b, _ := json.Marshal(NewResponse("msg_1", "m", "", calls, apitype.ChatStats{StopReason: "stop"}, 9))
	wantJSON := `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_x","name":"f","input":{"a":1}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}`
	if diff := cmp.Diff(wantJSON, string(b)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var names []string
	for _, e := range Stop(apitype.ChatStats{StopReason: "stop"}, calls, 9) {
		names = append(names, e.Name)
	}
	if got := strings.Join(names, ","); got != "content_block_stop,content_block_start,content_block_delta,content_block_stop,message_delta,message_stop" {
		t.Errorf("stream end with a call: %s", got)
	}
}
