package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"homering/app/api/apitype"
)

// ErrRequest is wrapped by every refused request.
var ErrRequest = errors.New("anthropic: invalid request")

func bad(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRequest}, a...)...)
}

// Message is one turn; Content is a string or an array of blocks.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// MessagesRequest is POST /v1/messages.
type MessagesRequest struct {
	Model         string          `json:"model"`
	Messages      []Message       `json:"messages"`
	System        json.RawMessage `json:"system,omitempty"`
	MaxTokens     int             `json:"max_tokens"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	TopK          *int            `json:"top_k,omitempty"`
	Stream        bool            `json:"stream"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Tools         []Tool          `json:"tools,omitempty"`
	ToolChoice    *ToolChoice     `json:"tool_choice,omitempty"`
}

// Tool is a client tool: a function the model may call with Input
// following InputSchema. Type is "custom" or empty (server tools, such as
// web search, are not run here).
type Tool struct {
	Type        string          `json:"type,omitempty"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// ToolChoice is tool_choice: auto (the default) or none are followed.
type ToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

// inBlock is a content block of a request: text, an assistant's tool_use
// or a user's tool_result (whose content is a string or text blocks).
type inBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// toolsOf translates tools to functions ({"name", "description",
// "parameters"}, as the chat templates print them).
func toolsOf(tools []Tool, choice *ToolChoice) ([]apitype.Tool, error) {
	if choice != nil {
		switch choice.Type {
		case "auto", "":
		case "none":
			return nil, nil
		default:
			return nil, bad("tool_choice %s is not supported; send auto or none (the model decides whether to call)", choice.Type)
		}
	}
	var out []apitype.Tool
	for i, t := range tools {
		if t.Type != "" && t.Type != "custom" {
			return nil, bad("tools[%d] is a server tool (%s), which this API does not run; send client tools with name and input_schema", i, t.Type)
		}
		if t.Name == "" {
			return nil, bad("tools[%d] has no name; name the tool", i)
		}
		schema := t.InputSchema
		if len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		name, _ := json.Marshal(t.Name)
		b := `{"name":` + string(name)
		if t.Description != "" {
			d, _ := json.Marshal(t.Description)
			b += `,"description":` + string(d)
		}
		b += `,"parameters":` + string(schema) + `}`
		out = append(out, apitype.Tool{Function: b})
	}
	return out, nil
}

// turns reads one message: its text, and the tool_use blocks of an
// assistant's (calls) or the tool_result blocks of a user's (results,
// which become "tool" messages before the user's text).
func turns(i int, m Message) ([]apitype.ChatMessage, error) {
	var blocks []inBlock
	if json.Unmarshal(m.Content, &blocks) != nil {
		c, err := text(m.Content, "content")
		if err != nil {
			return nil, err
		}
		return []apitype.ChatMessage{{Role: m.Role, Content: c}}, nil
	}
	var out []apitype.ChatMessage
	var b strings.Builder
	var calls []apitype.ToolCall
	for _, bl := range blocks {
		switch {
		case bl.Type == "text":
			b.WriteString(bl.Text)
		case bl.Type == "tool_use" && m.Role == "assistant":
			in := bl.Input
			if len(in) == 0 || string(in) == "null" {
				in = json.RawMessage("{}")
			}
			calls = append(calls, apitype.ToolCall{ID: bl.ID, Name: bl.Name, Arguments: string(in)})
		case bl.Type == "tool_result" && m.Role == "user":
			c, err := text(bl.Content, "tool_result content")
			if err != nil {
				return nil, err
			}
			out = append(out, apitype.ChatMessage{Role: "tool", Content: c, ToolCallID: bl.ToolUseID})
		default:
			return nil, bad("content block type %q is not supported in a%s %s message; send text blocks, tool_use in assistant messages and tool_result in user messages", bl.Type, map[bool]string{true: "n"}[m.Role == "assistant"], m.Role)
		}
	}
	if b.Len() > 0 || len(calls) > 0 || len(out) == 0 {
		out = append(out, apitype.ChatMessage{Role: m.Role, Content: b.String(), ToolCalls: calls})
	}
	return out, nil
}

func text(raw json.RawMessage, what string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", bad("%s must be a string or an array of text blocks", what)
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type != "text" {
			return "", bad("%s block type %q is not supported; send text blocks only", what, bl.Type)
		}
		b.WriteString(bl.Text)
	}
	return b.String(), nil
}

// FromMessages translates a Messages request.
func FromMessages(r MessagesRequest) (apitype.ChatRequest, error) {
	switch {
	case r.MaxTokens <= 0:
		return apitype.ChatRequest{}, bad("max_tokens must be a positive number")
	case len(r.Messages) == 0:
		return apitype.ChatRequest{}, bad("messages is empty; send at least one message")
	case len(r.StopSequences) > 0:
		return apitype.ChatRequest{}, bad("stop_sequences are not supported yet")
	case r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 1):
		return apitype.ChatRequest{}, bad("temperature %g is outside 0-1", *r.Temperature)
	case r.TopP != nil && (*r.TopP <= 0 || *r.TopP > 1):
		return apitype.ChatRequest{}, bad("top_p %g is outside (0, 1]", *r.TopP)
	}
	sys, err := text(r.System, "system")
	if err != nil {
		return apitype.ChatRequest{}, err
	}
	tools, err := toolsOf(r.Tools, r.ToolChoice)
	if err != nil {
		return apitype.ChatRequest{}, err
	}
	out := apitype.ChatRequest{Model: r.Model, System: sys, MaxTokens: r.MaxTokens, Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK, Tools: tools}
	for i, m := range r.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return apitype.ChatRequest{}, bad("message %d has role %q; use user or assistant (system goes in the system field)", i, m.Role)
		}
		ms, err := turns(i, m)
		if err != nil {
			return apitype.ChatRequest{}, err
		}
		out.Messages = append(out.Messages, ms...)
	}
	return out, nil
}

// StopReason maps a generation's end to Anthropic's stop_reason. A reply
// cut before max_tokens was cut by the full context: Anthropic's
// "model_context_window_exceeded", so a client can tell the two apart
// (a max_tokens beyond the context is lowered to it, and then always ends so).
func StopReason(st apitype.ChatStats, maxTokens int) string {
	switch {
	case st.StopReason == "tool_use":
		return "tool_use"
	case st.StopReason != "length":
		return "end_turn"
	case st.CompletionTokens < maxTokens:
		return "model_context_window_exceeded"
	}
	return "max_tokens"
}

// Block is a content block of a reply: text, or a tool_use (ID, Name,
// Input) for a call.
type Block struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"-"`
	Name  string          `json:"-"`
	Input json.RawMessage `json:"-"`
}

// MarshalJSON writes a text block as {type, text} and a tool_use block as
// {type, id, name, input}, as Anthropic's are.
func (b Block) MarshalJSON() ([]byte, error) {
	if b.Type == "tool_use" {
		return json.Marshal(struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}{b.Type, b.ID, b.Name, b.Input})
	}
	type plain Block
	return json.Marshal(plain(b))
}

// toolUse is the tool_use block of a call.
func toolUse(c apitype.ToolCall) Block {
	id := c.ID
	if strings.HasPrefix(id, "call_") {
		id = "toolu_" + strings.TrimPrefix(id, "call_")
	}
	return Block{Type: "tool_use", ID: id, Name: c.Name, Input: json.RawMessage(c.Arguments)}
}

// withCalls is st with the stop reason of a reply that made calls.
func withCalls(st apitype.ChatStats, calls []apitype.ToolCall) apitype.ChatStats {
	if len(calls) > 0 {
		st.StopReason = "tool_use"
	}
	return st
}

// Usage counts tokens.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// Response is a Message answer (and message_start's message).
type Response struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Role         string  `json:"role"`
	Model        string  `json:"model"`
	Content      []Block `json:"content"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        Usage   `json:"usage"`
}

// NewResponse builds a non-streamed answer: its text, then a tool_use
// block per call (stop_reason "tool_use" when any).
func NewResponse(id, model, text string, calls []apitype.ToolCall, st apitype.ChatStats, maxTokens int) Response {
	sr := StopReason(withCalls(st, calls), maxTokens)
	var content []Block
	if text != "" || len(calls) == 0 {
		content = append(content, Block{Type: "text", Text: text})
	}
	for _, c := range calls {
		content = append(content, toolUse(c))
	}
	return Response{ID: id, Type: "message", Role: "assistant", Model: model,
		Content:    content,
		StopReason: &sr, Usage: Usage{InputTokens: st.PromptTokens, OutputTokens: st.CompletionTokens}}
}

// Event is one server-sent event of a stream: Name goes on the `event:`
// line, Data (which carries the same type) on `data:`.
type Event struct {
	Name string
	Data any
}

// Start returns the events before the first token.
func Start(id, model string, inputTokens int) []Event {
	msg := Response{ID: id, Type: "message", Role: "assistant", Model: model, Content: []Block{}, Usage: Usage{InputTokens: inputTokens}}
	return []Event{
		{"message_start", map[string]any{"type": "message_start", "message": msg}},
		{"content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": Block{Type: "text", Text: ""}}},
		{"ping", map[string]any{"type": "ping"}},
	}
}

// Delta returns the event of one token.
func Delta(text string) Event {
	return Event{"content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
		"delta": map[string]string{"type": "text_delta", "text": text}}}
}

// Stop returns the events after the last token: the text block's end,
// then each call as a tool_use block (its input as one input_json_delta),
// then the message's end.
func Stop(st apitype.ChatStats, calls []apitype.ToolCall, maxTokens int) []Event {
	evs := []Event{{"content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}}}
	for i, c := range calls {
		b := toolUse(c)
		start := b
		start.Input = json.RawMessage("{}")
		evs = append(evs,
			Event{"content_block_start", map[string]any{"type": "content_block_start", "index": i + 1, "content_block": start}},
			Event{"content_block_delta", map[string]any{"type": "content_block_delta", "index": i + 1,
				"delta": map[string]string{"type": "input_json_delta", "partial_json": c.Arguments}}},
			Event{"content_block_stop", map[string]any{"type": "content_block_stop", "index": i + 1}})
	}
	return append(evs,
		Event{"message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": StopReason(withCalls(st, calls), maxTokens), "stop_sequence": nil},
			"usage": map[string]int{"input_tokens": st.PromptTokens, "output_tokens": st.CompletionTokens}}},
		Event{"message_stop", map[string]any{"type": "message_stop"}})
}

// ErrorBody is Anthropic's error answer (and the data of an error event).
type ErrorBody struct {
	Type  string      `json:"type"`
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong.
type ErrorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// NewError builds an error; typ is "invalid_request_error", "api_error",
// "authentication_error", "not_found_error" or "overloaded_error".
func NewError(typ, message string) ErrorBody {
	return ErrorBody{Type: "error", Error: ErrorDetail{Type: typ, Message: message}}
}

// ModelNotFound is the 404 of a model this device does not have.
func ModelNotFound(model string) ErrorBody {
	return NewError("not_found_error", fmt.Sprintf("The model '%s' does not exist on this device; GET /v1/models lists the models it can run.", model))
}

// ModelInfo is an entry of GET /v1/models for Anthropic clients (those that
// send anthropic-version), and GET /v1/models/{id}.
type ModelInfo struct {
	Type        string `json:"type"` // "model"
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"` // RFC 3339
}

// ModelList is GET /v1/models in Anthropic's shape: one page holding all.
type ModelList struct {
	Data    []ModelInfo `json:"data"`
	HasMore bool        `json:"has_more"`
	FirstID *string     `json:"first_id"`
	LastID  *string     `json:"last_id"`
}

// NewModelInfo describes one model; created is when its file changed.
func NewModelInfo(id string, created time.Time) ModelInfo {
	return ModelInfo{Type: "model", ID: id, DisplayName: id, CreatedAt: created.UTC().Format(time.RFC3339)}
}

// Models lists ms.
func Models(ms []ModelInfo) ModelList {
	l := ModelList{Data: append([]ModelInfo{}, ms...)}
	if len(ms) > 0 {
		first, last := ms[0].ID, ms[len(ms)-1].ID
		l.FirstID, l.LastID = &first, &last
	}
	return l
}
