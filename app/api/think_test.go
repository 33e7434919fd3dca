package api

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// qwen3Think is enough of a Qwen 3 template for ThinkFormatOf: its history
// drops an answer's <think> part.
const qwen3Think = `{%- for message in messages %}{%- if '</think>' in message.content %}<think>{%- endif %}<|im_start|>{{ message.role }}{%- endfor %}`

// thinkTokens is a reply whose markers are cut across tokens.
var thinkTokens = []string{"<thi", "nk>x</th", "ink>ans", "wer"}

// postBody posts body to path and returns the answer's body (HTTP 200).
func postBody(t *testing.T, url, path, body string, hdr ...string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", url+path, strings.NewReader(body))
	req.Header.Set("anthropic-version", "2023-06-01")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: HTTP %d: %s", path, resp.StatusCode, b)
	}
	return string(b)
}

// streamed joins the thinking and answer of an SSE or NDJSON stream, each
// line's JSON read by part.
func streamed(t *testing.T, body string, part func(line []byte) (thinking, answer string)) (thinking, answer string) {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "event: ") || line == "" || line == "data: [DONE]" {
			continue
		}
		th, a := part([]byte(strings.TrimPrefix(line, "data: ")))
		if strings.Contains(th+a, "<") || strings.Contains(th+a, ">") {
			t.Errorf("a piece shows part of a marker: thinking %q, answer %q", th, a)
		}
		thinking, answer = thinking+th, answer+a
	}
	return thinking, answer
}

// A reply's <think> part reaches each API apart from its answer, streamed
// or not (OpenAI's reasoning_content, Ollama's thinking, the UI's thinking
// tokens), and never in the answer; Anthropic's clients get the answer
// alone.
func TestCompatThinking(t *testing.T) {
	msgs := `"messages":[{"role":"user","content":"Hi"}]`
	for _, tt := range []struct {
		name, path, body string
		hdr              []string
		read             func(t *testing.T, body string) (thinking, answer string)
	}{
		{"openai", "/v1/chat/completions", `{` + msgs + `}`, nil, func(t *testing.T, body string) (string, string) {
			var r struct {
				Choices []struct {
					Message struct {
						Content          string `json:"content"`
						ReasoningContent string `json:"reasoning_content"`
					} `json:"message"`
				} `json:"choices"`
			}
			must(t, json.Unmarshal([]byte(body), &r))
			return r.Choices[0].Message.ReasoningContent, r.Choices[0].Message.Content
		}},
		{"openai stream", "/v1/chat/completions", `{"stream":true,` + msgs + `}`, nil, func(t *testing.T, body string) (string, string) {
			return streamed(t, body, func(line []byte) (string, string) {
				var c struct {
					Choices []struct {
						Delta struct {
							Content          string `json:"content"`
							ReasoningContent string `json:"reasoning_content"`
						} `json:"delta"`
					} `json:"choices"`
				}
				must(t, json.Unmarshal(line, &c))
				return c.Choices[0].Delta.ReasoningContent, c.Choices[0].Delta.Content
			})
		}},
		{"ollama", "/api/chat", `{"stream":false,` + msgs + `}`, nil, func(t *testing.T, body string) (string, string) {
			var r struct {
				Message struct{ Content, Thinking string }
			}
			must(t, json.Unmarshal([]byte(body), &r))
			return r.Message.Thinking, r.Message.Content
		}},
		{"ollama stream", "/api/chat", `{` + msgs + `}`, nil, func(t *testing.T, body string) (string, string) {
			return streamed(t, body, func(line []byte) (string, string) {
				var r struct {
					Message struct{ Content, Thinking string }
				}
				must(t, json.Unmarshal(line, &r))
				return r.Message.Thinking, r.Message.Content
			})
		}},
		{"ollama generate", "/api/generate", `{"stream":false,"prompt":"Hi"}`, nil, func(t *testing.T, body string) (string, string) {
			var r struct{ Response, Thinking string }
			must(t, json.Unmarshal([]byte(body), &r))
			return r.Thinking, r.Response
		}},
		{"anthropic", "/v1/messages", `{"max_tokens":50,` + msgs + `}`, nil, func(t *testing.T, body string) (string, string) {
			var r struct{ Content []struct{ Type, Text string } }
			must(t, json.Unmarshal([]byte(body), &r))
			if len(r.Content) != 1 || r.Content[0].Type != "text" {
				t.Errorf("content %s", body)
			}
			return "x", r.Content[0].Text // Anthropic's clients get no thinking
		}},
		{"anthropic stream", "/v1/messages", `{"stream":true,"max_tokens":50,` + msgs + `}`, nil, func(t *testing.T, body string) (string, string) {
			_, a := streamed(t, body, func(line []byte) (string, string) {
				var e struct{ Delta struct{ Text string } }
				must(t, json.Unmarshal(line, &e))
				return "", e.Delta.Text
			})
			return "x", a
		}},
		{"ui", "/api/v1/chat", `{` + msgs + `}`, []string{"Authorization", "Bearer secret"}, func(t *testing.T, body string) (string, string) {
			return streamed(t, body, func(line []byte) (string, string) {
				var tok struct{ Text, Thinking string }
				must(t, json.Unmarshal(line, &tok))
				return tok.Thinking, tok.Text
			})
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			chat := &modelChat{scripted: scripted{tokens: thinkTokens}, path: ggufWithTemplate(t, qwen3Think)}
			srv, _, _ := newChatServer(t, chat, "")
			body := postBody(t, srv.URL, tt.path, tt.body, tt.hdr...)
			if th, a := tt.read(t, body); th != "x" || a != "answer" {
				t.Errorf("thinking %q, answer %q; want \"x\", \"answer\":\n%s", th, a, body)
			}
		})
	}
}

// A model whose template does not reason apart (llama's, stories260K's
// none) and a raw prompt get the reply byte for byte, <think> and all.
func TestCompatNoThinkingPassesThrough(t *testing.T) {
	for _, tt := range []struct{ name, tmpl, path, body, want string }{
		{"llama template", `{% for message in messages %}<|start_header_id|>{{ message.role }}<|end_header_id|>{% endfor %}`,
			"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}]}`, `"content":"\u003cthink\u003ex\u003c/think\u003eanswer"`},
		{"no template", "", "/api/chat", `{"stream":false,"messages":[{"role":"user","content":"Hi"}]}`, `"content":"\u003cthink\u003ex\u003c/think\u003eanswer"`},
		{"raw prompt", qwen3Think, "/v1/completions", `{"prompt":"Hi"}`, `"text":"\u003cthink\u003ex\u003c/think\u003eanswer"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			chat := &modelChat{scripted: scripted{tokens: thinkTokens}, path: ggufWithTemplate(t, tt.tmpl)}
			srv, _, _ := newChatServer(t, chat, "")
			body := postBody(t, srv.URL, tt.path, tt.body)
			if !strings.Contains(body, tt.want) || strings.Contains(body, "reasoning_content") || strings.Contains(body, "thinking") {
				t.Errorf("want %s in %s", tt.want, body)
			}
		})
	}
}

// A reply that thinks and then calls a tool: the thinking never reaches the
// tool parser or the content, and the call is parsed.
func TestCompatThinkingThenToolCall(t *testing.T) {
	tokens := []string{"<think>I need the weather", " tool.</think>\n\n<tool_call>\n{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"}
	tools := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`
	chat := &modelChat{scripted: scripted{tokens: tokens}, path: ggufWithTemplate(t, qwenMarkers+qwen3Think)}
	srv, _, _ := newChatServer(t, chat, "")
	body := postBody(t, srv.URL, "/v1/chat/completions", `{"tools":`+tools+`,"messages":[{"role":"user","content":"Weather?"}]}`)
	var r struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				Content          *string `json:"content"`
				ReasoningContent string  `json:"reasoning_content"`
				ToolCalls        []struct {
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	must(t, json.Unmarshal([]byte(body), &r))
	m := r.Choices[0].Message
	if r.Choices[0].FinishReason != "tool_calls" || m.Content != nil || m.ReasoningContent != "I need the weather tool." ||
		len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` {
		t.Errorf("reply %s", body)
	}
}

// r1Opening is enough of an R1 distill's template: its generation prompt
// opens the <think> block, so the reply starts inside it.
const r1Opening = `{% if '</think>' in content %}{% endif %}{% if add_generation_prompt %}{{'<｜Assistant｜><think>\n'}}{% endif %}`

// Ollama's think: false leaves the reasoning out (the model may still
// reason where its template forces it); true on a model without a
// reasoning format is Ollama's 400; a level counts as true; anything else
// is a 400 that names the values. An R1 distill's reply, which starts
// inside the block its prompt opened, is split all the same.
func TestOllamaThink(t *testing.T) {
	chatMsgs := `"stream":false,"messages":[{"role":"user","content":"Hi"}]`
	for _, tt := range []struct {
		name, tmpl string
		tokens     []string
		body       string
		status     int
		thinking   string
		answer     string
		think      *bool
	}{
		{"think false", qwen3Think, thinkTokens, `{"think":false,` + chatMsgs + `}`, 200, "", "answer", ptr(false)},
		{"think true", qwen3Think, thinkTokens, `{"think":true,` + chatMsgs + `}`, 200, "x", "answer", ptr(true)},
		{"think level", qwen3Think, thinkTokens, `{"think":"high",` + chatMsgs + `}`, 200, "x", "answer", ptr(true)},
		{"think absent", qwen3Think, thinkTokens, `{` + chatMsgs + `}`, 200, "x", "answer", nil},
		{"r1 opened block", r1Opening, []string{"x</th", "ink>\n\nans", "wer"}, `{` + chatMsgs + `}`, 200, "x", "answer", nil},
		{"generate think false", qwen3Think, thinkTokens, `{"think":false,"stream":false,"prompt":"Hi"}`, 200, "", "answer", ptr(false)},
		{"think true, no reasoning format", "", thinkTokens, `{"think":true,` + chatMsgs + `}`, 400, "", "", nil},
		{"think bogus", qwen3Think, thinkTokens, `{"think":"max",` + chatMsgs + `}`, 400, "", "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			chat := &modelChat{scripted: scripted{tokens: tt.tokens}, path: ggufWithTemplate(t, tt.tmpl)}
			srv, _, _ := newChatServer(t, chat, "")
			path := "/api/chat"
			if strings.Contains(tt.body, `"prompt"`) {
				path = "/api/generate"
			}
			resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(tt.body))
			must(t, err)
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("HTTP %d, want %d: %s", resp.StatusCode, tt.status, b)
			}
			if tt.status != 200 {
				if !strings.Contains(strings.ToLower(string(b)), "think") {
					t.Errorf("the 400 does not say what about think: %s", b)
				}
				return
			}
			var r struct {
				Message            struct{ Content, Thinking string }
				Response, Thinking string
			}
			must(t, json.Unmarshal(b, &r))
			th, a := r.Message.Thinking+r.Thinking, r.Message.Content+r.Response
			if th != tt.thinking || a != tt.answer {
				t.Errorf("thinking %q, answer %q; want %q, %q:\n%s", th, a, tt.thinking, tt.answer, b)
			}
			chat.mu.Lock()
			defer chat.mu.Unlock()
			if len(chat.got) != 1 {
				t.Fatalf("%d requests reached the agent", len(chat.got))
			}
			if got := chat.got[0].Think; (got == nil) != (tt.think == nil) || got != nil && *got != *tt.think {
				t.Errorf("the agent got think %v, want %v", got, tt.think)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
