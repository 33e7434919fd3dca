package api

import (
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/app/problem"
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
			method := tt.method
			if method == "" {
				method = "POST"
			}
			hr, err := http.NewRequest(method, srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			hr.Header.Set("Content-Type", "application/json")
			for k, v := range tt.header {
				hr.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(hr)
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
			if got := resp.Header.Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow: %q, want %q", got, tt.wantAllow)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

type compatCase struct {
	name      string
	chat      Chatter // nil: an agent without chat
	method    string  // "": POST
	path      string
	header    map[string]string
	body      string
	wantCode  int
	wantType  string
	wantAllow string
	want      string
}

func compatCases() []compatCase {
	reply := &scripted{tokens: []string{"Hi", "!"}}
	broken := &scripted{tokens: []string{"Hi"}, err: errors.New("runner: boom")}
	// The engine child refuses a schema it cannot turn into a grammar
	// before any token (app/agent words it as a problem).
	unschemed := &scripted{err: problem.New(problem.BadRequest, "The JSON schema cannot be turned into a grammar; fix it.")}
	return []compatCase{
		{name: "openai chat", chat: reply, path: "/v1/chat/completions",
			body:     `{"model":"tiny","messages":[{"role":"user","content":"Hello"}]}`,
			wantCode: 200, wantType: "application/json",
			want: `{"id":"chatcmpl-ID","object":"chat.completion","created":T,"model":"tiny","system_fingerprint":"homering","choices":[{"index":0,"message":{"role":"assistant","content":"Hi!"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}
`},
		{name: "openai chat streamed with usage", chat: reply, path: "/v1/chat/completions",
			body:     `{"model":"tiny","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hello"}]}`,
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
		{name: "openai completion", chat: reply, path: "/v1/completions", body: `{"model":"tiny","prompt":"Once"}`,
			wantCode: 200, wantType: "application/json",
			want: `{"id":"cmpl-ID","object":"text_completion","created":T,"model":"tiny","choices":[{"index":0,"text":"Hi!","logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}
`},
		{name: "openai completion streamed", chat: reply, path: "/v1/completions", body: `{"model":"tiny","prompt":"Once","stream":true}`,
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
			body:     `{"model":"tiny","max_tokens":2,"messages":[{"role":"user","content":"Hello"}]}`,
			wantCode: 200, wantType: "application/json",
			want: `{"id":"msg_ID","type":"message","role":"assistant","model":"tiny","content":[{"type":"text","text":"Hi!"}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":2}}
`},
		{name: "anthropic streamed", chat: reply, path: "/v1/messages",
			body:     `{"model":"tiny","max_tokens":2,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`,
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
		{name: "ollama chat streamed", chat: reply, path: "/api/chat", body: `{"model":"tiny","messages":[{"role":"user","content":"Hi"}]}`,
			wantCode: 200, wantType: "application/x-ndjson",
			want: `{"model":"tiny","created_at":"T","message":{"role":"assistant","content":"Hi"},"done":false}
{"model":"tiny","created_at":"T","message":{"role":"assistant","content":"!"},"done":false}
{"model":"tiny","created_at":"T","message":{"role":"assistant","content":""},"done":true,"done_reason":"length","prompt_eval_count":3,"eval_count":2}
`},
		{name: "ollama chat", chat: reply, path: "/api/chat", body: `{"model":"tiny","stream":false,"messages":[{"role":"user","content":"Hi"}]}`,
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
		{name: "ollama generate streamed", chat: reply, path: "/api/generate", body: `{"model":"tiny","prompt":"Once"}`,
			wantCode: 200, wantType: "application/x-ndjson",
			want: `{"model":"tiny","created_at":"T","response":"Hi","done":false}
{"model":"tiny","created_at":"T","response":"!","done":false}
{"model":"tiny","created_at":"T","response":"","done":true,"done_reason":"length","prompt_eval_count":3,"eval_count":2}
`},
		{name: "ollama generate", chat: reply, path: "/api/generate", body: `{"model":"tiny","prompt":"Once","stream":false}`,
			wantCode: 200, wantType: "application/json",
			want: `{"model":"tiny","created_at":"T","response":"Hi!","done":true,"done_reason":"length","prompt_eval_count":3,"eval_count":2}
`},
		{name: "ollama generate, a bad request", chat: reply, path: "/api/generate", body: `{"prompt":""}`,
			wantCode: 400, wantType: "application/json",
			want: `{"error":"Prompt is empty."}
`},

		// Structured output the engine cannot follow: each API's own 400,
		// streamed or not, since nothing was sent yet.
		{name: "openai chat, a schema the engine refuses", chat: unschemed, path: "/v1/chat/completions",
			body:     `{"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"thing"}}},"messages":[{"role":"user","content":"Hello"}]}`,
			wantCode: 400, wantType: "application/json",
			want: `{"error":{"message":"The JSON schema cannot be turned into a grammar; fix it.","type":"invalid_request_error","param":null,"code":null}}
`},
		{name: "openai chat streamed, a schema the engine refuses", chat: unschemed, path: "/v1/chat/completions",
			body:     `{"stream":true,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"thing"}}},"messages":[{"role":"user","content":"Hello"}]}`,
			wantCode: 400, wantType: "application/json",
			want: `{"error":{"message":"The JSON schema cannot be turned into a grammar; fix it.","type":"invalid_request_error","param":null,"code":null}}
`},
		{name: "openai chat, a response_format of another type", chat: reply, path: "/v1/chat/completions",
			body:     `{"response_format":{"type":"xml"},"messages":[{"role":"user","content":"Hello"}]}`,
			wantCode: 400, wantType: "application/json",
			want: `{"error":{"message":"The response_format type \"xml\" is not supported; use text, json_object or json_schema.","type":"invalid_request_error","param":null,"code":null}}
`},
		{name: "ollama chat streamed, a schema the engine refuses", chat: unschemed, path: "/api/chat",
			body:     `{"format":{"type":"thing"},"messages":[{"role":"user","content":"Hi"}]}`,
			wantCode: 400, wantType: "application/json",
			want: `{"error":"The JSON schema cannot be turned into a grammar; fix it."}
`},
		{name: "ollama generate, a format of another kind", chat: reply, path: "/api/generate", body: `{"prompt":"Once","format":"xml"}`,
			wantCode: 400, wantType: "application/json",
			want: `{"error":"Format \"xml\" is not supported; send \"json\" or a JSON schema object."}
`},

		// A model this device does not have: each API's own 404, never
		// another model's answer.
		{name: "openai chat, an unknown model", chat: reply, path: "/v1/chat/completions",
			body:     `{"model":"gpt-4o","messages":[{"role":"user","content":"Hello"}]}`,
			wantCode: 404, wantType: "application/json",
			want: "{\"error\":{\"message\":\"The model `gpt-4o` does not exist on this device; GET /v1/models lists the models it can run.\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"model_not_found\"}}\n"},
		{name: "openai completion, an unknown model", chat: reply, path: "/v1/completions", body: `{"model":"davinci","prompt":"Once","stream":true}`,
			wantCode: 404, wantType: "application/json",
			want: "{\"error\":{\"message\":\"The model `davinci` does not exist on this device; GET /v1/models lists the models it can run.\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"model_not_found\"}}\n"},
		{name: "anthropic, an unknown model", chat: reply, path: "/v1/messages",
			body:     `{"model":"claude-sonnet-4-5","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`,
			wantCode: 404, wantType: "application/json",
			want: `{"type":"error","error":{"type":"not_found_error","message":"The model 'claude-sonnet-4-5' does not exist on this device; GET /v1/models lists the models it can run."}}
`},
		{name: "ollama chat, an unknown model", chat: reply, path: "/api/chat", body: `{"model":"llama3.2","messages":[{"role":"user","content":"Hi"}]}`,
			wantCode: 404, wantType: "application/json",
			want: `{"error":"model 'llama3.2' not found; GET /api/tags lists the models this device has"}
`},
		{name: "ollama generate, an unknown model", chat: reply, path: "/api/generate", body: `{"model":"llama3.2:1b","prompt":"Once","stream":false}`,
			wantCode: 404, wantType: "application/json",
			want: `{"error":"model 'llama3.2:1b' not found; GET /api/tags lists the models this device has"}
`},
		{name: "the model's other spellings", chat: reply, path: "/api/generate", body: `{"model":"TINY.gguf","prompt":"Once","stream":false}`,
			wantCode: 200, wantType: "application/json",
			want: `{"model":"tiny","created_at":"T","response":"Hi!","done":true,"done_reason":"length","prompt_eval_count":3,"eval_count":2}
`},

		// Unknown paths and methods: 404 and 405 in the API's shape, not
		// the control API's "wrong token".
		{name: "openai, an unknown path", chat: reply, path: "/v1/embeddings", body: `{"model":"tiny","input":"x"}`,
			wantCode: 404, wantType: "application/json",
			want: `{"error":{"message":"Invalid URL (POST /v1/embeddings); this device's OpenAI API has /v1/chat/completions, /v1/completions, /v1/models and /v1/models/{id}.","type":"invalid_request_error","param":null,"code":null}}
`},
		{name: "openai, a wrong method", chat: reply, method: "GET", path: "/v1/chat/completions",
			wantCode: 405, wantType: "application/json", wantAllow: "POST",
			want: `{"error":{"message":"GET /v1/chat/completions is not allowed; use POST.","type":"invalid_request_error","param":null,"code":null}}
`},
		{name: "anthropic, an unknown path", chat: reply, path: "/v1/messages/count_tokens", body: `{}`,
			wantCode: 404, wantType: "application/json",
			want: `{"type":"error","error":{"type":"not_found_error","message":"Invalid URL (POST /v1/messages/count_tokens); this device's Anthropic API has /v1/messages, /v1/models and /v1/models/{id}."}}
`},
		{name: "anthropic, a wrong method", chat: reply, method: "GET", path: "/v1/messages",
			wantCode: 405, wantType: "application/json", wantAllow: "POST",
			want: `{"type":"error","error":{"type":"invalid_request_error","message":"GET /v1/messages is not allowed; use POST."}}
`},
		{name: "ollama, an unknown path", chat: reply, path: "/api/embed", body: `{}`,
			wantCode: 404, wantType: "application/json",
			want: `{"error":"Invalid URL (POST /api/embed); this device's Ollama API has /api/chat, /api/generate, /api/ps, /api/show, /api/tags and /api/version."}
`},
		{name: "ollama, a wrong method", chat: reply, method: "DELETE", path: "/api/tags",
			wantCode: 405, wantType: "application/json", wantAllow: "GET, HEAD",
			want: `{"error":"DELETE /api/tags is not allowed; use GET or HEAD."}
`},

		// The model lists and Ollama's version, show and ps.
		{name: "openai models", chat: reply, method: "GET", path: "/v1/models",
			wantCode: 200, wantType: "application/json",
			want: `{"object":"list","data":[{"id":"tiny","object":"model","created":T,"owned_by":"homering"}]}
`},
		{name: "openai model", chat: reply, method: "GET", path: "/v1/models/tiny",
			wantCode: 200, wantType: "application/json",
			want: `{"id":"tiny","object":"model","created":T,"owned_by":"homering"}
`},
		{name: "openai model, unknown", chat: reply, method: "GET", path: "/v1/models/gpt-4o",
			wantCode: 404, wantType: "application/json",
			want: "{\"error\":{\"message\":\"The model `gpt-4o` does not exist on this device; GET /v1/models lists the models it can run.\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"model_not_found\"}}\n"},
		{name: "anthropic models", chat: reply, method: "GET", path: "/v1/models", header: map[string]string{"anthropic-version": "2023-06-01"},
			wantCode: 200, wantType: "application/json",
			want: `{"data":[{"type":"model","id":"tiny","display_name":"tiny","created_at":"T"}],"has_more":false,"first_id":"tiny","last_id":"tiny"}
`},
		{name: "ollama tags", chat: reply, method: "GET", path: "/api/tags",
			wantCode: 200, wantType: "application/json",
			want: `{"models":[{"name":"tiny","model":"tiny","modified_at":"1970-01-01T00:00:00Z","size":1,"digest":"","details":{"parent_model":"","format":"gguf","family":"","families":null,"parameter_size":"","quantization_level":""}}]}
`},
		{name: "ollama version", method: "GET", path: "/api/version",
			wantCode: 200, wantType: "application/json",
			want: `{"version":"0.17.4"}
`},
		{name: "ollama version, HEAD", method: "HEAD", path: "/api/version",
			wantCode: 200, wantType: "application/json"},
		{name: "ollama show", chat: reply, path: "/api/show", body: `{"model":"tiny"}`,
			wantCode: 200, wantType: "application/json",
			want: `{"details":{"parent_model":"","format":"gguf","family":"","families":null,"parameter_size":"","quantization_level":""},"model_info":{},"capabilities":["completion"],"modified_at":"1970-01-01T00:00:00Z"}
`},
		{name: "ollama show, an unknown model by its older field", chat: reply, path: "/api/show", body: `{"name":"llama3.2"}`,
			wantCode: 404, wantType: "application/json",
			want: `{"error":"model 'llama3.2' not found; GET /api/tags lists the models this device has"}
`},
		{name: "ollama ps, nothing loaded yet", chat: reply, method: "GET", path: "/api/ps",
			wantCode: 200, wantType: "application/json",
			want: `{"models":[]}
`},
	}
}

// The JSON schema of OpenAI's response_format and Ollama's format reaches
// the agent as the request's JSONSchema; JSON mode is any object.
func TestCompatJSONSchemaReachesTheAgent(t *testing.T) {
	schema := `{"type":"object","properties":{"a":{"type":"string"}}}`
	for _, tt := range []struct{ path, body, want string }{
		{"/v1/chat/completions", `{"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":` + schema + `}},"messages":[{"role":"user","content":"x"}]}`, schema},
		{"/v1/chat/completions", `{"response_format":{"type":"json_object"},"messages":[{"role":"user","content":"x"}]}`, `{"type":"object"}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`, ""},
		{"/api/chat", `{"format":` + schema + `,"stream":false,"messages":[{"role":"user","content":"x"}]}`, schema},
		{"/api/generate", `{"format":"json","prompt":"x"}`, `{"type":"object"}`},
	} {
		chat := &scripted{tokens: []string{"{}"}}
		srv, _, _ := newChatServer(t, chat, "")
		resp, err := http.Post(srv.URL+tt.path, "application/json", strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close() // the status and what the agent got are the test
		if resp.StatusCode != http.StatusOK || len(chat.got) != 1 || chat.got[0].JSONSchema != tt.want {
			t.Errorf("%s %s: HTTP %d, the agent got %+v; want the schema %s", tt.path, tt.body, resp.StatusCode, chat.got, tt.want)
		}
	}
}
