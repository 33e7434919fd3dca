package chat

import (
	"reflect"
	"strings"
	"testing"
)

func TestToolParser(t *testing.T) {
	call := func(name, args string) ToolCall { return ToolCall{Name: name, Arguments: []byte(args)} }
	for _, c := range []struct {
		name        string
		family      ToolFamily
		reply       string
		wantContent string
		wantCalls   []ToolCall
	}{
		{"qwen one call", Qwen25, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "",
			[]ToolCall{call("get_weather", `{"city":"Paris"}`)}},
		{"qwen text then two calls", Qwen3, "Checking.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": \"{\\\"x\\\": 1}\"}\n</tool_call>", "Checking.\n",
			[]ToolCall{call("a", `{}`), call("b", `{"x":1}`)}},
		{"qwen call cut before its end tag", Qwen3, "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"k\": [1, 2]}}", "",
			[]ToolCall{call("a", `{"k":[1,2]}`)}},
		{"qwen text with a lone <", Qwen25, "a < b and <tool but no call", "a < b and <tool but no call", nil},
		{"qwen broken call is content", Qwen25, "<tool_call>\n{\"name\": \"a\", \"argu", "<tool_call>\n{\"name\": \"a\", \"argu", nil},
		{"qwen3 thinking then call", Qwen3, "<think>\nNeed weather.\n</think>\n\n<tool_call>\n{\"name\": \"w\", \"arguments\": {\"c\": \"P\"}}\n</tool_call>", "<think>\nNeed weather.\n</think>\n\n",
			[]ToolCall{call("w", `{"c":"P"}`)}},
		{"llama call", Llama3, `{"name": "get_weather", "parameters": {"city": "Paris"}}`, "",
			[]ToolCall{call("get_weather", `{"city":"Paris"}`)}},
		{"llama python tag and two calls", Llama3, "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"q\": \"x\"}}", "",
			[]ToolCall{call("a", `{}`), call("b", `{"q":"x"}`)}},
		{"llama text", Llama3, "  The weather is {probably} fine.", "  The weather is {probably} fine.", nil},
		{"llama JSON that is not a call", Llama3, `{"answer": 42}`, `{"answer": 42}`, nil},
		{"mistral calls", Mistral, ` [TOOL_CALLS] [{"name": "a", "arguments": {"x": 1}, "id": "abcDEF123"}, {"name": "b", "arguments": {}}]`, " ",
			[]ToolCall{{ID: "abcDEF123", Name: "a", Arguments: []byte(`{"x":1}`)}, call("b", `{}`)}},
		{"mistral nemo call", MistralNemo, `[TOOL_CALLS][{"name": "a", "arguments": {"x": 1}, "id": "abcDEF123"}]`, "",
			[]ToolCall{{ID: "abcDEF123", Name: "a", Arguments: []byte(`{"x":1}`)}}},
		{"mistral text with brackets", Mistral, "[1] see [TOOL] docs", "[1] see [TOOL] docs", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Whole, a byte at a time and cut in two anywhere: the same
			// content and calls, and no streamed piece that is not content.
			splits := [][]string{{c.reply}, strings.Split(c.reply, "")}
			for i := 1; i < len(c.reply); i++ {
				splits = append(splits, []string{c.reply[:i], c.reply[i:]})
			}
			for _, pieces := range splits {
				p := ToolTemplate{Family: c.family}.Parser()
				var streamed strings.Builder
				for _, piece := range pieces {
					streamed.WriteString(p.Feed(piece))
					if !strings.HasPrefix(c.wantContent, streamed.String()) {
						t.Fatalf("pieces %q: streamed %q, which is not the start of the content %q", pieces, streamed.String(), c.wantContent)
					}
				}
				rest, calls := p.Finish()
				if got := streamed.String() + rest; got != c.wantContent {
					t.Fatalf("pieces %q: content %q, want %q", pieces, got, c.wantContent)
				}
				if !reflect.DeepEqual(calls, c.wantCalls) {
					t.Fatalf("pieces %q: calls %+v, want %+v", pieces, calls, c.wantCalls)
				}
			}
		})
	}
}

// What a renderer writes for a call, its parser reads back.
func TestToolParserReadsRenderedCalls(t *testing.T) {
	calls := []ToolCall{{ID: "abcDEF123", Name: "get_weather", Arguments: []byte(`{"city":"Paris"}`)}}
	for _, f := range []ToolFamily{Llama3, Qwen25, Qwen3, Mistral, MistralNemo} {
		tt := ToolTemplate{Family: f}
		msgs := []ToolMessage{{Role: "user", Content: "Weather?"}, {Role: "assistant", ToolCalls: calls}}
		prompt, err := tt.Render(msgs, nil)
		if err != nil {
			t.Fatal(err)
		}
		before, err := tt.Render(msgs[:1], nil)
		if err != nil {
			t.Fatal(err)
		}
		// The assistant turn: what follows the first turn's prompt.
		common := 0
		for common < len(before) && common < len(prompt) && before[common] == prompt[common] {
			common++
		}
		turn := prompt[common:]
		for _, gen := range []string{"<|start_header_id|>assistant<|end_header_id|>\n\n", "<|im_start|>assistant\n"} {
			turn = strings.TrimSuffix(turn, gen)
		}
		turn = strings.TrimPrefix(turn, "<think>\n\n</think>\n\n") // Qwen 3's empty reasoning
		for _, end := range []string{"<|eot_id|>", "<|im_end|>\n", "</s>"} {
			turn = strings.TrimSuffix(turn, end)
		}
		turn = strings.TrimPrefix(turn, "<|start_header_id|>assistant<|end_header_id|>\n\n")
		turn = strings.TrimPrefix(turn, "<|im_start|>assistant\n")
		p := tt.Parser()
		content := p.Feed(turn)
		rest, got := p.Finish()
		want := calls
		if f != Mistral && f != MistralNemo {
			want = []ToolCall{{Name: "get_weather", Arguments: []byte(`{"city":"Paris"}`)}}
		}
		if content+rest != "" || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %q read as content %q and calls %+v", f, turn, content+rest, got)
		}
	}
}
