package chat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The renderers are held to the families' official Jinja templates: the
// conversations of testdata/tool_conversations.json rendered by Jinja2 as
// transformers renders them (../shared/chat-templates/oracle.py, with the
// templates' text) are testdata/tool_golden.json, and each renderer must
// write the same prompt, byte for byte, or fail where the template raises.

type goldenConv struct {
	Name     string `json:"name"`
	Tools    bool   `json:"tools"`
	Messages []struct {
		Role      string `json:"role"`
		Content   string `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
		ToolCallID string `json:"tool_call_id"`
	} `json:"messages"`
}

func loadGolden(t *testing.T) (tools []Tool, convs []goldenConv, golden map[string]struct {
	Prompts map[string]string `json:"prompts"`
}) {
	t.Helper()
	var in struct {
		Tools []struct {
			Function json.RawMessage `json:"function"`
		} `json:"tools"`
		Conversations []goldenConv `json:"conversations"`
	}
	b, err := os.ReadFile("testdata/tool_conversations.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	for _, tl := range in.Tools {
		tools = append(tools, Tool{Function: tl.Function})
	}
	b, err = os.ReadFile("testdata/tool_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	return tools, in.Conversations, golden
}

func (c goldenConv) messages() []ToolMessage {
	var out []ToolMessage
	for _, m := range c.Messages {
		msg := ToolMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		out = append(out, msg)
	}
	return out
}

var goldenTemplates = map[string]ToolTemplate{
	"llama3.1":     {Family: Llama3, Date: "26 Jul 2024"},
	"llama3.2":     {Family: Llama3, Date: "26 Jul 2024"},
	"qwen2.5":      {Family: Qwen25, System: "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."},
	"qwen3":        {Family: Qwen3},
	"mistral-v0.3": {Family: Mistral},
	"mistral-nemo": {Family: MistralNemo},
}

func TestToolRenderMatchesTemplates(t *testing.T) {
	tools, convs, golden := loadGolden(t)
	for name, tt := range goldenTemplates {
		g, ok := golden[name]
		if !ok {
			t.Fatalf("no golden prompts for %s", name)
		}
		for _, c := range convs {
			t.Run(name+"/"+c.Name, func(t *testing.T) {
				want := g.Prompts[c.Name]
				var ts []Tool
				if c.Tools {
					ts = tools
				}
				got, err := tt.Render(c.messages(), ts)
				if strings.HasPrefix(want, "ERROR: ") {
					if err == nil {
						t.Fatalf("rendered where the template raises %q:\n%s", want, got)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("render differs from the template's\n got: %q\nwant: %q", got, want)
				}
			})
		}
	}
}

// The real templates, where ../shared has them, are recognised as their
// family (with Qwen 2.5's default system prompt and Llama's date).
func TestToolTemplateOfOfficial(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "chat-templates")
	if _, err := os.Stat(dir); err != nil {
		t.Skip("the official templates are in ../shared/chat-templates, not here")
	}
	day := time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC)
	for name, want := range goldenTemplates {
		b, err := os.ReadFile(filepath.Join(dir, name+".jinja"))
		if err != nil {
			t.Fatal(err)
		}
		got := ToolTemplateOf(string(b), day)
		if name == "llama3.2" {
			want.Date = "05 Mar 2026" // it calls strftime_now
		}
		if got != want {
			t.Errorf("%s: recognised as %+v, want %+v", name, got, want)
		}
	}
}

func TestToolTemplateOf(t *testing.T) {
	day := time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		tmpl string
		want ToolTemplate
	}{
		{`{{- bos_token }}{%- set date_string = "26 Jul 2024" %}<|start_header_id|>{%- if message.role == 'ipython' or 'tool_calls' in message %}`, ToolTemplate{Family: Llama3, Date: "26 Jul 2024"}},
		{`{%- if strftime_now is defined %}<|start_header_id|>ipython tool_calls`, ToolTemplate{Family: Llama3, Date: "05 Mar 2026"}},
		{`<|im_start|>system <tools></tools> <tool_call> <think>`, ToolTemplate{Family: Qwen3}},
		{`{{- 'You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\n<tools>" }} <|im_start|> <tool_call>`, ToolTemplate{Family: Qwen25, System: "You are a helpful assistant."}},
		{`{{- "[AVAILABLE_TOOLS] [" }} [TOOL_CALLS] [TOOL_RESULTS]`, ToolTemplate{Family: Mistral}},
		{`{% for message in messages %}<|im_start|>{{ message.role }}{% endfor %}`, ToolTemplate{}}, // ChatML: no tools
		{`<|start_header_id|>{{ message.role }}<|end_header_id|>`, ToolTemplate{}},                  // Llama 3.0: no tools
		{`{{- "[AVAILABLE_TOOLS][" }}[TOOL_CALLS][TOOL_RESULTS]`, ToolTemplate{Family: MistralNemo}},
		{`[SYSTEM_PROMPT] [AVAILABLE_TOOLS] [TOOL_CALLS] [ARGS]`, ToolTemplate{}}, // Mistral Small 3's format
		{``, ToolTemplate{}},
	} {
		if got := ToolTemplateOf(c.tmpl, day); got != c.want {
			t.Errorf("%.50q: %+v, want %+v", c.tmpl, got, c.want)
		}
	}
	if _, err := (ToolTemplate{}).Render([]ToolMessage{{Role: "user", Content: "x"}}, nil); err != ErrNoToolCalling {
		t.Errorf("a template without tools renders (%v)", err)
	}
}

func TestPyJSON(t *testing.T) {
	for _, c := range []struct {
		in     string
		indent int
		want   string
	}{
		{`{"b":1,"a":[1,2.50,{}],"c":"é\"\n\u0001"}`, 0, `{"b": 1, "a": [1, 2.50, {}], "c": "é\"\n\u0001"}`},
		{`{"a":[],"b":{"c":null}}`, 2, "{\n  \"a\": [],\n  \"b\": {\n    \"c\": null\n  }\n}"},
		{`"<&>"`, 0, `"<&>"`},
	} {
		got, err := pyJSON(json.RawMessage(c.in), c.indent)
		if err != nil || got != c.want {
			t.Errorf("pyJSON(%s, %d) = %q, %v; want %q", c.in, c.indent, got, err, c.want)
		}
	}
}
