package api

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"homering/app/api/apitype"
)

// ggufWithTemplate writes a GGUF holding only tokenizer.chat_template: all
// agent.RenderTools reads of a model.
func ggufWithTemplate(t *testing.T, tmpl string) string {
	t.Helper()
	var b []byte
	str := func(s string) { b = binary.LittleEndian.AppendUint64(b, uint64(len(s))); b = append(b, s...) }
	b = append(b, "GGUF"...)
	b = binary.LittleEndian.AppendUint32(b, 3)
	b = binary.LittleEndian.AppendUint64(b, 0) // tensors
	b = binary.LittleEndian.AppendUint64(b, 1) // keys
	str("tokenizer.chat_template")
	b = binary.LittleEndian.AppendUint32(b, 8) // string
	str(tmpl)
	p := filepath.Join(t.TempDir(), "tool-model.gguf")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// modelChat is a scripted Chatter serving a model file of its own.
type modelChat struct {
	scripted
	path string
}

func (m *modelChat) Served() []apitype.ServedModel {
	return []apitype.ServedModel{{Name: "tiny", Size: 1, Path: m.path}}
}

const qwenMarkers = `{%- if tools %}<|im_start|>system <tools></tools> <tool_call>{%- endif %}`

// A reply that calls a tool reaches each API's client as that API's calls,
// streamed or not; the streamed content never shows part of the call, and
// the prompt is the family's rendering with the tools.
func TestCompatToolCalls(t *testing.T) {
	// The call's marker cut across tokens, after some content.
	tokens := []string{"Let me check.", "\n<tool", "_call>\n{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"}
	tools := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	for _, tt := range []struct {
		name, path, body string
		check            func(t *testing.T, body string)
	}{
		{"openai", "/v1/chat/completions", `{"tools":` + tools + `,"messages":[{"role":"user","content":"Weather in Paris?"}]}`, func(t *testing.T, body string) {
			var r struct {
				Choices []struct {
					FinishReason string `json:"finish_reason"`
					Message      struct {
						Content   *string `json:"content"`
						ToolCalls []struct {
							ID, Type string
							Function struct{ Name, Arguments string }
						} `json:"tool_calls"`
					} `json:"message"`
				} `json:"choices"`
			}
			must(t, json.Unmarshal([]byte(body), &r))
			c := r.Choices[0]
			if c.FinishReason != "tool_calls" || c.Message.Content == nil || *c.Message.Content != "Let me check.\n" || len(c.Message.ToolCalls) != 1 ||
				c.Message.ToolCalls[0].Function.Name != "get_weather" || c.Message.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` ||
				c.Message.ToolCalls[0].Type != "function" || !strings.HasPrefix(c.Message.ToolCalls[0].ID, "call_") {
				t.Errorf("reply %s", body)
			}
		}},
		{"openai stream", "/v1/chat/completions", `{"stream":true,"tools":` + tools + `,"messages":[{"role":"user","content":"Weather in Paris?"}]}`, func(t *testing.T, body string) {
			var content, finish string
			var calls []string
			pieces := 0
			for _, line := range strings.Split(body, "\n") {
				data, ok := strings.CutPrefix(line, "data: ")
				if !ok || data == "[DONE]" {
					continue
				}
				var c struct {
					Choices []struct {
						FinishReason *string `json:"finish_reason"`
						Delta        struct {
							Content   string `json:"content"`
							ToolCalls []struct {
								Index    int `json:"index"`
								Function struct{ Name, Arguments string }
							} `json:"tool_calls"`
						} `json:"delta"`
					} `json:"choices"`
				}
				must(t, json.Unmarshal([]byte(data), &c))
				if strings.Contains(c.Choices[0].Delta.Content, "<") {
					t.Errorf("streamed content shows part of a call: %q", c.Choices[0].Delta.Content)
				}
				content += c.Choices[0].Delta.Content
				for _, tc := range c.Choices[0].Delta.ToolCalls {
					if tc.Function.Name != "" {
						calls = append(calls, tc.Function.Name)
					}
					if tc.Function.Arguments != "" {
						calls[tc.Index] += tc.Function.Arguments
						pieces++
					}
				}
				if c.Choices[0].FinishReason != nil {
					finish = *c.Choices[0].FinishReason
				}
			}
			// The arguments come in fragments, as OpenAI streams them.
			if content != "Let me check.\n" || finish != "tool_calls" || strings.Join(calls, ";") != `get_weather{"city":"Paris"}` || pieces < 3 {
				t.Errorf("stream: content %q, finish %q, calls %v in %d pieces:\n%s", content, finish, calls, pieces, body)
			}
		}},
		{"ollama", "/api/chat", `{"stream":false,"tools":` + tools + `,"messages":[{"role":"user","content":"Weather in Paris?"}]}`, func(t *testing.T, body string) {
			var r struct {
				Message struct {
					Content   string
					ToolCalls []struct {
						Function struct {
							Name      string
							Arguments map[string]any
						}
					} `json:"tool_calls"`
				}
			}
			must(t, json.Unmarshal([]byte(body), &r))
			if len(r.Message.ToolCalls) != 1 || r.Message.ToolCalls[0].Function.Name != "get_weather" || r.Message.ToolCalls[0].Function.Arguments["city"] != "Paris" {
				t.Errorf("reply %s", body)
			}
		}},
		{"ollama stream", "/api/chat", `{"tools":` + tools + `,"messages":[{"role":"user","content":"Weather in Paris?"}]}`, func(t *testing.T, body string) {
			if !strings.Contains(body, `"tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]`) || strings.Contains(body, "<tool") {
				t.Errorf("stream %s", body)
			}
		}},
		{"anthropic", "/v1/messages", `{"max_tokens":50,"tools":[{"name":"get_weather","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"Weather in Paris?"}]}`, func(t *testing.T, body string) {
			if !strings.Contains(body, `{"type":"tool_use","id":"toolu_`) || !strings.Contains(body, `"name":"get_weather","input":{"city":"Paris"}}`) ||
				!strings.Contains(body, `"stop_reason":"tool_use"`) {
				t.Errorf("reply %s", body)
			}
		}},
		{"anthropic stream", "/v1/messages", `{"stream":true,"max_tokens":50,"tools":[{"name":"get_weather","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"Weather in Paris?"}]}`, func(t *testing.T, body string) {
			if !strings.Contains(body, `"partial_json":"{\"city\":\"Paris\"}"`) || !strings.Contains(body, `"stop_reason":"tool_use"`) || strings.Contains(body, "<tool") {
				t.Errorf("stream %s", body)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			chat := &modelChat{scripted: scripted{tokens: tokens}, path: ggufWithTemplate(t, qwenMarkers)}
			srv, _, _ := newChatServer(t, chat, "")
			req, _ := http.NewRequest("POST", srv.URL+tt.path, strings.NewReader(tt.body))
			req.Header.Set("anthropic-version", "2023-06-01")
			resp, err := http.DefaultClient.Do(req)
			must(t, err)
			defer func() { _ = resp.Body.Close() }()
			b, _ := io.ReadAll(bufio.NewReader(resp.Body))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("HTTP %d: %s", resp.StatusCode, b)
			}
			tt.check(t, string(b))
			if len(chat.got) != 1 || len(chat.got[0].Messages) != 0 || !strings.Contains(chat.got[0].Prompt, "<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"") {
				t.Errorf("the agent got %+v; want the prompt rendered with the tools", chat.got)
			}
		})
	}
}

// A model whose template defines no tool calling gets each API's 400.
func TestCompatToolsNeedATemplateWithTools(t *testing.T) {
	for _, tt := range []struct{ path, body, want string }{
		{"/v1/chat/completions", `{"tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"x"}]}`, `"type":"invalid_request_error"`},
		{"/api/chat", `{"tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"x"}]}`, `{"error":"This model`},
		{"/v1/messages", `{"max_tokens":5,"tools":[{"name":"f","input_schema":{}}],"messages":[{"role":"user","content":"x"}]}`, `"type":"error"`},
	} {
		chat := &modelChat{path: ggufWithTemplate(t, `{% for message in messages %}<|im_start|>{{ message.role }}{% endfor %}`)}
		srv, _, _ := newChatServer(t, chat, "")
		resp, err := http.Post(srv.URL+tt.path, "application/json", strings.NewReader(tt.body))
		must(t, err)
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), tt.want) || !strings.Contains(string(b), "chat template has no tool calling") || len(chat.got) != 0 {
			t.Errorf("%s: HTTP %d %s", tt.path, resp.StatusCode, b)
		}
	}
}

// /api/show lists the tools capability of a model whose template has tool
// calling, as Ollama does.
func TestOllamaShowToolsCapability(t *testing.T) {
	for tmpl, want := range map[string]string{qwenMarkers: `"capabilities":["completion","tools"]`, `<|im_start|>{{ role }}`: `"capabilities":["completion"]`} {
		chat := &modelChat{path: ggufWithTemplate(t, tmpl)}
		srv, _, _ := newChatServer(t, chat, "")
		resp, err := http.Post(srv.URL+"/api/show", "application/json", strings.NewReader(`{"model":"tiny"}`))
		must(t, err)
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if !strings.Contains(string(b), want) {
			t.Errorf("template %q: /api/show %s, want %s", tmpl, b, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// OpenAI's tool_choice "required" and a named function make the reply a
// call: the engine gets the grammar of a call in the family's format, of
// any of the tools or of the named one.
func TestCompatForcedToolCall(t *testing.T) {
	tools := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},{"type":"function","function":{"name":"get_time"}}]`
	for choice, want := range map[string]string{
		`"required"`: `{"anyOf":[{"type":"object","properties":{"name":{"const":"get_weather"},"arguments":{"type":"object","properties":{"city":{"type":"string"}}}},"required":["name","arguments"],"additionalProperties":false},{"type":"object","properties":{"name":{"const":"get_time"},"arguments":{"type":"object"}},"required":["name","arguments"],"additionalProperties":false}]}`,
		`{"type":"function","function":{"name":"get_time"}}`: `{"type":"object","properties":{"name":{"const":"get_time"},"arguments":{"type":"object"}},"required":["name","arguments"],"additionalProperties":false}`,
	} {
		chat := &modelChat{scripted: scripted{tokens: []string{"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"}}, path: ggufWithTemplate(t, qwenMarkers)}
		srv, _, _ := newChatServer(t, chat, "")
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"tool_choice":`+choice+`,"tools":`+tools+`,"messages":[{"role":"user","content":"Time?"}]}`))
		must(t, err)
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"finish_reason":"tool_calls"`) {
			t.Errorf("tool_choice %s: HTTP %d %s", choice, resp.StatusCode, b)
		}
		if len(chat.got) != 1 || chat.got[0].JSONSchema != want || chat.got[0].SchemaBefore != "<tool_call>\n" || chat.got[0].SchemaAfter != "\n</tool_call>" {
			t.Errorf("tool_choice %s: the agent got %+v; want the grammar of a Qwen call, schema %s", choice, chat.got, want)
		}
	}
}
