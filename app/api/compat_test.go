package api

import (
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// compatVolatile matches what changes from call to call in a compatible
// API's answer: response IDs and timestamps.
var compatVolatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`(chatcmpl-|cmpl-|msg_)[0-9a-f]{24}`), "${1}ID"},
	{regexp.MustCompile(`"created":[0-9]+`), `"created":T`},
	{regexp.MustCompile(`"created_at":"[^"]*"`), `"created_at":"T"`},
}

// TestCompatWire pins the OpenAI-, Anthropic- and Ollama-compatible
// endpoints' answers byte for byte (IDs and times aside), whole and
// streamed, for a reply, a bad request, an engine failure mid-stream and an
// agent without chat. The official clients run against a real agent in
// app/apptest (TestAPIClients).
func TestCompatWire(t *testing.T) {
	for _, tt := range compatCases() {
		t.Run(tt.name, func(t *testing.T) {
			srv, _, _ := newChatServer(t, tt.chat, "")
			resp, err := http.Post(srv.URL+tt.path, "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			got := string(b)
			for _, v := range compatVolatile {
				got = v.re.ReplaceAllString(got, v.with)
			}
			if resp.StatusCode != tt.wantCode || resp.Header.Get("Content-Type") != tt.wantType {
				t.Errorf("HTTP %d %s, want %d %s", resp.StatusCode, resp.Header.Get("Content-Type"), tt.wantCode, tt.wantType)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

type compatCase struct {
	name     string
	chat     Chatter // nil: an agent without chat
	path     string
	body     string
	wantCode int
	wantType string
	want     string
}

func compatCases() []compatCase {
	reply := &scripted{tokens: []string{"Hi", "!"}}
	broken := &scripted{tokens: []string{"Hi"}, err: errors.New("runner: boom")}
	return []compatCase{
		{name: "openai chat", chat: reply, path: "/v1/chat/completions",
			body:     `{"model":"x","messages":[{"role":"user","content":"Hello"}]}`,
			wantCode: 200, wantType: "application/json",
			want: `{"id":"chatcmpl-ID","object":"chat.completion","created":T,"model":"tiny","system_fingerprint":"homering","choices":[{"index":0,"message":{"role":"assistant","content":"Hi!"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}
`},
		{name: "openai chat streamed with usage", chat: reply, path: "/v1/chat/completions",
			body:     `{"model":"x","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hello"}]}`,
			wantCode: 200, wantType: "text/event-stream",
			want: `data: {"id":"chatcmpl-ID","object":"chat.completion.chunk","created":T,"model":"tiny","system_fingerprint":"homering","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}

data: {"id":"chatcmpl-ID","object":"chat.completion.chunk","created":T,"model":"tiny","system_fingerprint":"homering","choices":[{"index":0,"delta":{"content":"!"},"finish_reason":null}]}

data: {"id":"chatcmpl-ID","object":"chat.completion.chunk","created":T,"model":"tiny","system_fingerprint":"homering","choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}

data: [DONE]

`},
		{name: "openai chat, a bad request", chat: reply, path: "/v1/chat/completions", body: `{"messages":[]}`,
			wantCode: 400, wantType: "application/json",
			want: `{"error":{"message":"Messages is empty; send at least one message.","type":"invalid_request_error","param":null,"code":null}}
`},
		{name: "openai chat, not JSON", chat: reply, path: "/v1/chat/completions", body: `{"messages":`,
			wantCode: 400, wantType: "application/json",
			want: `{"error":{"message":"The request body is not valid JSON: unexpected EOF.","type":"invalid_request_error","param":null,"code":null}}
`},
		{name: "openai chat, the engine fails", chat: broken, path: "/v1/chat/completions",
			body:     `{"messages":[{"role":"user","content":"Hello"}]}`,
			wantCode: 500, wantType: "application/json",
			want: `{"error":{"message":"Runner: boom.","type":"server_error","param":null,"code":null}}
`},
		{name: "openai chat streamed, the engine fails", chat: broken, path: "/v1/chat/completions",
			body:     `{"stream":true,"messages":[{"role":"user","content":"Hello"}]}`,
			wantCode: 200, wantType: "text/event-stream",
			want: `data: {"id":"chatcmpl-ID","object":"chat.completion.chunk","created":T,"model":"tiny","system_fingerprint":"homering","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}

data: {"error":{"message":"Runner: boom.","type":"server_error","param":null,"code":null}}

`},
		{name: "openai chat streamed, no chat", path: "/v1/chat/completions",
			body:     `{"stream":true,"messages":[{"role":"user","content":"Hello"}]}`,
			wantCode: 503, wantType: "application/json",
			want: "{\"error\":{\"message\":\"Chat is not available in this agent; start it with `homering headless --model FILE.gguf` or the app.\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n"},
		{name: "openai completion", chat: reply, path: "/v1/completions", body: `{"model":"x","prompt":"Once"}`,
			wantCode: 200, wantType: "application/json",
			want: `{"id":"cmpl-ID","object":"text_completion","created":T,"model":"tiny","choices":[{"index":0,"text":"Hi!","logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}
`},
		{name: "openai completion streamed", chat: reply, path: "/v1/completions", body: `{"model":"x","prompt":"Once","stream":true}`,
			wantCode: 200, wantType: "text/event-stream",
			want: `data: {"id":"cmpl-ID","object":"text_completion","created":T,"model":"tiny","choices":[{"index":0,"text":"Hi","logprobs":null,"finish_reason":null}]}

data: {"id":"cmpl-ID","object":"text_completion","created":T,"model":"tiny","choices":[{"index":0,"text":"!","logprobs":null,"finish_reason":null}]}

data: {"id":"cmpl-ID","object":"text_completion","created":T,"model":"tiny","choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}

data: [DONE]

`},
		{name: "openai completion, a bad request", chat: reply, path: "/v1/completions", body: `{"prompt":""}`,
			wantCode: 400, wantType: "application/json",
			want: `{"error":{"message":"Prompt is empty.","type":"invalid_request_error","param":null,"code":null}}
`},
		{name: "anthropic", chat: reply, path: "/v1/messages",
			body:     `{"model":"x","max_tokens":8,"messages":[{"role":"user","content":"Hello"}]}`,
			wantCode: 200, wantType: "application/json",
			want: `{"id":"msg_ID","type":"message","role":"assistant","model":"tiny","content":[{"type":"text","text":"Hi!"}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":2}}
`},
		{name: "anthropic streamed", chat: reply, path: "/v1/messages",
			body:     `{"model":"x","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`,
			wantCode: 200, wantType: "text/event-stream",
			want: `event: message_start
data: {"message":{"id":"msg_ID","type":"message","role":"assistant","model":"tiny","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}},"type":"message_start"}

event: content_block_start
data: {"content_block":{"type":"text","text":""},"index":0,"type":"content_block_start"}

event: ping
data: {"type":"ping"}

event: content_block_delta
data: {"delta":{"text":"Hi","type":"text_delta"},"index":0,"type":"content_block_delta"}

event: content_block_delta
data: {"delta":{"text":"!","type":"text_delta"},"index":0,"type":"content_block_delta"}

event: content_block_stop
data: {"index":0,"type":"content_block_stop"}

event: message_delta
data: {"delta":{"stop_reason":"max_tokens","stop_sequence":null},"type":"message_delta","usage":{"input_tokens":3,"output_tokens":2}}

event: message_stop
data: {"type":"message_stop"}

`},
		{name: "anthropic, a bad request", chat: reply, path: "/v1/messages", body: `{"max_tokens":8,"messages":[]}`,
			wantCode: 400, wantType: "application/json",
			want: `{"type":"error","error":{"type":"invalid_request_error","message":"Messages is empty; send at least one message."}}
`},
		{name: "anthropic, the engine fails", chat: broken, path: "/v1/messages",
			body:     `{"max_tokens":8,"messages":[{"role":"user","content":"Hello"}]}`,
			wantCode: 500, wantType: "application/json",
			want: `{"type":"error","error":{"type":"api_error","message":"Runner: boom."}}
`},
		{name: "anthropic streamed, the engine fails", chat: broken, path: "/v1/messages",
			body:     `{"max_tokens":8,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`,
			wantCode: 200, wantType: "text/event-stream",
			want: `event: message_start
data: {"message":{"id":"msg_ID","type":"message","role":"assistant","model":"tiny","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}},"type":"message_start"}

event: content_block_start
data: {"content_block":{"type":"text","text":""},"index":0,"type":"content_block_start"}

event: ping
data: {"type":"ping"}

event: content_block_delta
data: {"delta":{"text":"Hi","type":"text_delta"},"index":0,"type":"content_block_delta"}

event: error
data: {"type":"error","error":{"type":"api_error","message":"Runner: boom."}}

`},
		{name: "anthropic streamed, no chat", path: "/v1/messages",
			body:     `{"max_tokens":8,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`,
			wantCode: 503, wantType: "application/json",
			want: "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Chat is not available in this agent; start it with `homering headless --model FILE.gguf` or the app.\"}}\n"},
		{name: "ollama chat streamed", chat: reply, path: "/api/chat", body: `{"model":"x","messages":[{"role":"user","content":"Hi"}]}`,
			wantCode: 200, wantType: "application/x-ndjson",
			want: `{"model":"tiny","created_at":"T","message":{"role":"assistant","content":"Hi"},"done":false}
{"model":"tiny","created_at":"T","message":{"role":"assistant","content":"!"},"done":false}
{"model":"tiny","created_at":"T","message":{"role":"assistant","content":""},"done":true,"done_reason":"length","prompt_eval_count":3,"eval_count":2}
`},
		{name: "ollama chat", chat: reply, path: "/api/chat", body: `{"model":"x","stream":false,"messages":[{"role":"user","content":"Hi"}]}`,
			wantCode: 200, wantType: "application/json",
			want: `{"model":"tiny","created_at":"T","message":{"role":"assistant","content":"Hi!"},"done":true,"done_reason":"length","prompt_eval_count":3,"eval_count":2}
`},
		{name: "ollama chat, a bad request", chat: reply, path: "/api/chat", body: `{"messages":[]}`,
			wantCode: 400, wantType: "application/json",
			want: `{"error":"Messages is empty; send at least one message."}
`},
		{name: "ollama chat streamed, the engine fails", chat: broken, path: "/api/chat", body: `{"messages":[{"role":"user","content":"Hi"}]}`,
			wantCode: 200, wantType: "application/x-ndjson",
			want: `{"model":"tiny","created_at":"T","message":{"role":"assistant","content":"Hi"},"done":false}
{"error":"Runner: boom."}
`},
		{name: "ollama chat, no chat", path: "/api/chat", body: `{"stream":false,"messages":[{"role":"user","content":"Hi"}]}`,
			wantCode: 503, wantType: "application/json",
			want: "{\"error\":\"Chat is not available in this agent; start it with `homering headless --model FILE.gguf` or the app.\"}\n"},
		{name: "ollama chat streamed, no chat", path: "/api/chat", body: `{"messages":[{"role":"user","content":"Hi"}]}`,
			wantCode: 503, wantType: "application/json",
			want: "{\"error\":\"Chat is not available in this agent; start it with `homering headless --model FILE.gguf` or the app.\"}\n"},
		{name: "ollama generate streamed", chat: reply, path: "/api/generate", body: `{"model":"x","prompt":"Once"}`,
			wantCode: 200, wantType: "application/x-ndjson",
			want: `{"model":"tiny","created_at":"T","response":"Hi","done":false}
{"model":"tiny","created_at":"T","response":"!","done":false}
{"model":"tiny","created_at":"T","response":"","done":true,"done_reason":"length","prompt_eval_count":3,"eval_count":2}
`},
		{name: "ollama generate", chat: reply, path: "/api/generate", body: `{"model":"x","prompt":"Once","stream":false}`,
			wantCode: 200, wantType: "application/json",
			want: `{"model":"tiny","created_at":"T","response":"Hi!","done":true,"done_reason":"length","prompt_eval_count":3,"eval_count":2}
`},
		{name: "ollama generate, a bad request", chat: reply, path: "/api/generate", body: `{"prompt":""}`,
			wantCode: 400, wantType: "application/json",
			want: `{"error":"Prompt is empty."}
`},
	}
}
