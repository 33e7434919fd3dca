package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"homering/app/api/apitype"
)

// ErrRequest is wrapped by every refused request; the text after it is one
// sentence for the caller.
var ErrRequest = errors.New("openai: invalid request")

// Message is a chat message. Content is a string or an array of parts;
// an assistant message may carry ToolCalls, and a "tool" message answers
// the call ToolCallID.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// ToolCall is a call of a function: in a reply, and in an assistant
// message sent back. Arguments is a JSON object written as a string.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is a ToolCall's function and arguments.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is an entry of tools: {"type": "function", "function": {...}}.
type Tool struct {
	Type     string          `json:"type"`
	Function json.RawMessage `json:"function"`
}

// StreamOptions of a streamed request.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ChatCompletionRequest is POST /v1/chat/completions.
type ChatCompletionRequest struct {
	Model               string          `json:"model"`
	Messages            []Message       `json:"messages"`
	Stream              bool            `json:"stream"`
	StreamOptions       *StreamOptions  `json:"stream_options,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	MaxTokens           *int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int            `json:"max_completion_tokens,omitempty"`
	Seed                *int64          `json:"seed,omitempty"`
	N                   *int            `json:"n,omitempty"`
	Tools               []Tool          `json:"tools,omitempty"`
	ToolChoice          json.RawMessage `json:"tool_choice,omitempty"`
	Logprobs            *bool           `json:"logprobs,omitempty"`
	ResponseFormat      *ResponseFormat `json:"response_format,omitempty"`
}

// ResponseFormat is response_format: "text", "json_object" (any JSON
// object) or "json_schema" (JSON that follows JSONSchema.Schema).
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema is response_format.json_schema. Replies follow Schema whether
// or not Strict is set: the grammar allows nothing else.
type JSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// anyObject is the schema of json_object: any JSON object, as OpenAI
// promises it.
const anyObject = `{"type":"object"}`

// schemaOf is the JSON schema f asks the reply to follow, "" for text.
func schemaOf(f *ResponseFormat) (string, error) {
	if f == nil {
		return "", nil
	}
	switch f.Type {
	case "text":
		return "", nil
	case "json_object":
		return anyObject, nil
	case "json_schema":
		if f.JSONSchema == nil || len(f.JSONSchema.Schema) == 0 || string(f.JSONSchema.Schema) == "null" {
			return "", bad("the response_format json_schema has no json_schema.schema; send the JSON schema the reply must follow")
		}
		if !isObject(f.JSONSchema.Schema) {
			return "", bad("the response_format json_schema.schema must be a JSON schema object, such as {\"type\":\"object\",\"properties\":{…}}")
		}
		return string(f.JSONSchema.Schema), nil
	}
	return "", bad("the response_format type %q is not supported; use text, json_object or json_schema", f.Type)
}

// isObject says whether raw (valid JSON) is an object.
func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

// CompletionRequest is POST /v1/completions.
type CompletionRequest struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"` // a string or an array of one string
	Stream        bool            `json:"stream"`
	StreamOptions *StreamOptions  `json:"stream_options,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	MaxTokens     *int            `json:"max_tokens,omitempty"`
	Seed          *int64          `json:"seed,omitempty"`
	N             *int            `json:"n,omitempty"`
}

func bad(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRequest}, a...)...)
}

// content reads a string or an array of text parts.
func content(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", bad("message content must be a string or an array of text parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", bad("content part type %q is not supported; send text parts only", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// MaxTemperature is the highest temperature OpenAI's API accepts. This
// API keeps its rule, and so do `homering run` and `homering chat`, so that
// a setting that works on one works on all.
const MaxTemperature = 2

// CheckTemperature refuses a temperature outside 0-MaxTemperature with one
// sentence (after ErrRequest's prefix; RefusedBecause gives it alone).
func CheckTemperature(t float64) error {
	if t < 0 || t > MaxTemperature {
		return bad("temperature %g is outside 0-%d", t, MaxTemperature)
	}
	return nil
}

// RefusedBecause is the sentence of a refused request without ErrRequest's
// prefix, for a person at the command line.
func RefusedBecause(err error) string {
	return strings.TrimPrefix(err.Error(), ErrRequest.Error()+": ")
}

func checkCommon(n *int, temp, topP *float64, maxTok *int) error {
	if n != nil && *n != 1 {
		return bad("n=%d is not supported; ask for one choice", *n)
	}
	if temp != nil {
		if err := CheckTemperature(*temp); err != nil {
			return err
		}
	}
	if topP != nil && (*topP <= 0 || *topP > 1) {
		return bad("top_p %g is outside (0, 1]", *topP)
	}
	if maxTok != nil && *maxTok < 0 {
		return bad("max_tokens %d is negative", *maxTok)
	}
	return nil
}

// FromChat translates a chat completion request.
func FromChat(r ChatCompletionRequest) (apitype.ChatRequest, error) {
	maxTok := r.MaxTokens
	if r.MaxCompletionTokens != nil {
		maxTok = r.MaxCompletionTokens
	}
	if err := checkCommon(r.N, r.Temperature, r.TopP, maxTok); err != nil {
		return apitype.ChatRequest{}, err
	}
	tools, force, forceName, err := toolsOf(r.Tools, r.ToolChoice)
	if err != nil {
		return apitype.ChatRequest{}, err
	}
	if r.Logprobs != nil && *r.Logprobs {
		return apitype.ChatRequest{}, bad("logprobs are not supported")
	}
	if len(r.Messages) == 0 {
		return apitype.ChatRequest{}, bad("messages is empty; send at least one message")
	}
	schema, err := schemaOf(r.ResponseFormat)
	if err != nil {
		return apitype.ChatRequest{}, err
	}
	if force && schema != "" {
		return apitype.ChatRequest{}, bad("tool_choice %s and a JSON response_format cannot both shape the reply; send one of them", strings.TrimSpace(string(r.ToolChoice)))
	}
	out := apitype.ChatRequest{Model: r.Model, Temperature: r.Temperature, TopP: r.TopP, Seed: r.Seed, JSONSchema: schema, Tools: tools,
		ForceCall: force, ForceName: forceName}
	if maxTok != nil {
		out.MaxTokens = *maxTok
	}
	for i, m := range r.Messages {
		role := m.Role
		switch role {
		case "developer":
			role = "system" // OpenAI's newer name for the system role
		case "system", "user", "assistant", "tool":
		default:
			return apitype.ChatRequest{}, bad("message %d has role %q; use system, user, assistant or tool", i, m.Role)
		}
		c, err := content(m.Content)
		if err != nil {
			return apitype.ChatRequest{}, err
		}
		msg := apitype.ChatMessage{Role: role, Content: c, ToolCallID: m.ToolCallID}
		if role == "tool" && m.ToolCallID == "" {
			return apitype.ChatRequest{}, bad("message %d has role tool without tool_call_id; send the id of the call it answers", i)
		}
		for _, tc := range m.ToolCalls {
			args := strings.TrimSpace(tc.Function.Arguments)
			if args == "" {
				args = "{}"
			}
			if !isObject(json.RawMessage(args)) {
				return apitype.ChatRequest{}, bad("message %d calls %s with arguments that are not a JSON object; send them as a JSON object in a string", i, tc.Function.Name)
			}
			msg.ToolCalls = append(msg.ToolCalls, apitype.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
		}
		out.Messages = append(out.Messages, msg)
	}
	return out, nil
}

// toolsOf reads tools and tool_choice: "auto" (the default: the model
// decides), "none" (the tools are left out), "required" (the reply is a
// call of one of them) and {"type": "function", "function": {"name": …}}
// (the reply is a call of that one).
func toolsOf(tools []Tool, choice json.RawMessage) (out []apitype.Tool, force bool, name string, err error) {
	switch ch := strings.TrimSpace(string(choice)); ch {
	case "", "null", `"auto"`:
	case `"none"`:
		return nil, false, "", nil
	case `"required"`:
		force = true
	default:
		var named struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(choice, &named) != nil || named.Type != "function" || named.Function.Name == "" {
			return nil, false, "", bad("tool_choice %s is not supported; send auto, none, required or {\"type\": \"function\", \"function\": {\"name\": …}}", ch)
		}
		force, name = true, named.Function.Name
	}
	found := name == ""
	for i, t := range tools {
		if t.Type != "function" || !isObject(t.Function) {
			return nil, false, "", bad("tools[%d] is not a function tool; send {\"type\": \"function\", \"function\": {\"name\": …, \"parameters\": …}}", i)
		}
		var f struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(t.Function, &f)
		if f.Name == "" {
			return nil, false, "", bad("tools[%d].function has no name; name the function", i)
		}
		found = found || f.Name == name
		out = append(out, apitype.Tool{Function: string(t.Function)})
	}
	switch {
	case force && len(out) == 0:
		return nil, false, "", bad("tool_choice asks for a tool call but tools is empty; send the tools the model may call")
	case !found:
		return nil, false, "", bad("tool_choice names the function %s, which is not among the tools; name one of them", name)
	}
	return out, force, name, nil
}

// FromCompletion translates a text completion request.
func FromCompletion(r CompletionRequest) (apitype.ChatRequest, error) {
	if err := checkCommon(r.N, r.Temperature, r.TopP, r.MaxTokens); err != nil {
		return apitype.ChatRequest{}, err
	}
	var prompt string
	if json.Unmarshal(r.Prompt, &prompt) != nil {
		var ps []string
		if json.Unmarshal(r.Prompt, &ps) != nil || len(ps) != 1 {
			return apitype.ChatRequest{}, bad("prompt must be a string or an array of one string")
		}
		prompt = ps[0]
	}
	if prompt == "" {
		return apitype.ChatRequest{}, bad("prompt is empty")
	}
	out := apitype.ChatRequest{Model: r.Model, Prompt: prompt, Temperature: r.Temperature, TopP: r.TopP, Seed: r.Seed}
	if r.MaxTokens != nil {
		out.MaxTokens = *r.MaxTokens
	} else {
		out.MaxTokens = 16 // OpenAI's documented default for completions
	}
	return out, nil
}

// FinishReason maps a stop reason to OpenAI's.
func FinishReason(stopReason string) string {
	if stopReason == "length" {
		return "length"
	}
	return "stop"
}

// finishWith is the finish reason of a reply that made calls or not.
func finishWith(st apitype.ChatStats, calls []apitype.ToolCall) string {
	if len(calls) > 0 {
		return "tool_calls"
	}
	return FinishReason(st.StopReason)
}

// ToolCalls are calls in OpenAI's shape.
func ToolCalls(calls []apitype.ToolCall) []ToolCall {
	var out []ToolCall
	for _, c := range calls {
		out = append(out, ToolCall{ID: c.ID, Type: "function", Function: FunctionCall{Name: c.Name, Arguments: c.Arguments}})
	}
	return out
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// UsageOf returns the usage of a finished generation.
func UsageOf(st apitype.ChatStats) Usage {
	return Usage{PromptTokens: st.PromptTokens, CompletionTokens: st.CompletionTokens, TotalTokens: st.PromptTokens + st.CompletionTokens}
}

// ResponseMessage is the assistant's message. Content is null in a
// reply that only calls tools, as OpenAI's is.
type ResponseMessage struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
	// ReasoningContent is the reply's thinking, kept apart from its answer
	// (a model whose template reasons apart: Qwen 3, QwQ, R1, gpt-oss), as
	// DeepSeek's API and vLLM name it.
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
}

// Choice is one answer.
type Choice struct {
	Index        int             `json:"index"`
	Message      ResponseMessage `json:"message"`
	FinishReason string          `json:"finish_reason"`
}

// ChatCompletion is the answer of a non-streamed chat completion.
type ChatCompletion struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	SystemFingerprint string   `json:"system_fingerprint"`
	Choices           []Choice `json:"choices"`
	Usage             Usage    `json:"usage"`
}

// NewChatCompletion builds a non-streamed answer: text, and the calls
// the reply made (finish_reason "tool_calls" when any).
func NewChatCompletion(id, model string, created int64, text string, calls []apitype.ToolCall, st apitype.ChatStats) ChatCompletion {
	msg := ResponseMessage{Role: "assistant", ToolCalls: ToolCalls(calls)}
	if text != "" || len(calls) == 0 {
		msg.Content = &text
	}
	return ChatCompletion{
		ID: id, Object: "chat.completion", Created: created, Model: model, SystemFingerprint: "homering",
		Choices: []Choice{{Index: 0, Message: msg, FinishReason: finishWith(st, calls)}},
		Usage:   UsageOf(st),
	}
}

// Delta is a streamed piece of the message.
type Delta struct {
	Role             string          `json:"role,omitempty"`
	Content          string          `json:"content,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"` // a piece of the thinking (ResponseMessage's)
	ToolCalls        []DeltaToolCall `json:"tool_calls,omitempty"`
}

// DeltaToolCall is a piece of a streamed call, as OpenAI streams them: the
// first piece of a call has its index, id, type, name and empty
// arguments; each later one its index and a fragment of the arguments,
// which clients append.
type DeltaToolCall struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function DeltaFunction `json:"function"`
}

// DeltaFunction is a DeltaToolCall's function: the name in the first
// piece, then fragments of the arguments.
type DeltaFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// ChunkChoice is a choice in a chunk; FinishReason is null until the last.
type ChunkChoice struct {
	Index        int     `json:"index"`
	Delta        Delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

// ChatCompletionChunk is one streamed event.
type ChatCompletionChunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint"`
	Choices           []ChunkChoice `json:"choices"`
	Usage             *Usage        `json:"usage,omitempty"`
}

// NewChunk builds the chunk of one token; the first chunk also carries the
// role, as OpenAI's do.
func NewChunk(id, model string, created int64, text string, first bool) ChatCompletionChunk {
	d := Delta{Content: text}
	if first {
		d.Role = "assistant"
	}
	return ChatCompletionChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model, SystemFingerprint: "homering",
		Choices: []ChunkChoice{{Index: 0, Delta: d}}}
}

// NewToolCallsChunks are the chunks of a streamed reply's calls, sent
// once the calls have been parsed: for each call, one that opens it (id,
// type, name) and then its arguments in fragments, as OpenAI streams
// them; first as NewChunk's.
func NewToolCallsChunks(id, model string, created int64, calls []apitype.ToolCall, first bool) []ChatCompletionChunk {
	var out []ChatCompletionChunk
	add := func(d DeltaToolCall) {
		c := NewChunk(id, model, created, "", first && len(out) == 0)
		c.Choices[0].Delta.ToolCalls = []DeltaToolCall{d}
		out = append(out, c)
	}
	for i, call := range calls {
		add(DeltaToolCall{Index: i, ID: call.ID, Type: "function", Function: DeltaFunction{Name: call.Name}})
		for _, f := range fragments(call.Arguments) {
			add(DeltaToolCall{Index: i, Function: DeltaFunction{Arguments: f}})
		}
	}
	return out
}

// fragments cuts JSON text into pieces about as a tokenizer would: after
// each structural character and at each string's end.
func fragments(s string) []string {
	var out []string
	start := 0
	for i, r := range s {
		switch {
		case strings.ContainsRune("{}[],:", r), r == '"' && i > start:
			out = append(out, s[start:i+1])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// NewFinalChunk ends the stream: an empty delta with the finish reason
// ("tool_calls" when calls is not empty).
func NewFinalChunk(id, model string, created int64, st apitype.ChatStats, calls []apitype.ToolCall, withUsage bool) ChatCompletionChunk {
	fr := finishWith(st, calls)
	c := ChatCompletionChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model, SystemFingerprint: "homering",
		Choices: []ChunkChoice{{Index: 0, Delta: Delta{}, FinishReason: &fr}}}
	if withUsage {
		u := UsageOf(st)
		c.Usage = &u
	}
	return c
}

// CompletionChoice is one text completion.
type CompletionChoice struct {
	Index        int     `json:"index"`
	Text         string  `json:"text"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

// Completion is the answer (and, with Object "text_completion", each
// streamed chunk) of /v1/completions.
type Completion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []CompletionChoice `json:"choices"`
	Usage   *Usage             `json:"usage,omitempty"`
}

// NewCompletion builds a completion answer or chunk. A nil st is a chunk
// in the middle of a stream.
func NewCompletion(id, model string, created int64, text string, st *apitype.ChatStats) Completion {
	c := Completion{ID: id, Object: "text_completion", Created: created, Model: model,
		Choices: []CompletionChoice{{Index: 0, Text: text}}}
	if st != nil {
		fr := FinishReason(st.StopReason)
		c.Choices[0].FinishReason = &fr
		u := UsageOf(*st)
		c.Usage = &u
	}
	return c
}

// Model is an entry of /v1/models.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ModelList is GET /v1/models.
type ModelList struct {
	Object string  `json:"object"`
	Data   []Model `json:"data"`
}

// Models lists the served models.
func Models(ms []apitype.ServedModel) ModelList {
	l := ModelList{Object: "list", Data: []Model{}}
	for _, m := range ms {
		l.Data = append(l.Data, Model{ID: m.Name, Object: "model", Created: m.Modified, OwnedBy: "homering"})
	}
	return l
}

// ErrorBody is OpenAI's error answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong.
type ErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// NewError builds an error answer; typ is "invalid_request_error" for the
// caller's mistakes and "server_error" for ours.
func NewError(typ, message string) ErrorBody {
	return ErrorBody{Error: ErrorDetail{Message: message, Type: typ}}
}

// WithCode sets the error's machine-readable code ("invalid_api_key",
// "model_not_found").
func (e ErrorBody) WithCode(code string) ErrorBody {
	e.Error.Code = &code
	return e
}

// ModelNotFound is the 404 of a model this device does not have, with the
// type and code api.openai.com sends (clients test the code).
func ModelNotFound(model string) ErrorBody {
	return NewError("invalid_request_error",
		fmt.Sprintf("The model `%s` does not exist on this device; GET /v1/models lists the models it can run.", model)).WithCode("model_not_found")
}
