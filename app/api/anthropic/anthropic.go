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
	Tools         json.RawMessage `json:"tools,omitempty"`
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
	case len(r.Tools) > 0 && string(r.Tools) != "null" && string(r.Tools) != "[]":
		return apitype.ChatRequest{}, bad("tools are not supported yet")
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
	out := apitype.ChatRequest{Model: r.Model, System: sys, MaxTokens: r.MaxTokens, Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK}
	for i, m := range r.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return apitype.ChatRequest{}, bad("message %d has role %q; use user or assistant (system goes in the system field)", i, m.Role)
		}
		c, err := text(m.Content, "content")
		if err != nil {
			return apitype.ChatRequest{}, err
		}
		out.Messages = append(out.Messages, apitype.ChatMessage{Role: m.Role, Content: c})
	}
	return out, nil
}

// StopReason maps a generation's end to Anthropic's stop_reason. A reply
// cut before max_tokens was cut by the full context: Anthropic's
// "model_context_window_exceeded", so a client can tell the two apart
// (a max_tokens beyond the context is lowered to it, and then always ends so).
func StopReason(st apitype.ChatStats, maxTokens int) string {
	switch {
	case st.StopReason != "length":
		return "end_turn"
	case st.CompletionTokens < maxTokens:
		return "model_context_window_exceeded"
	}
	return "max_tokens"
}

// Block is a content block.
type Block struct {
	Type string `json:"type"`
	Text string `json:"text"`
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

// NewResponse builds a non-streamed answer.
func NewResponse(id, model, text string, st apitype.ChatStats, maxTokens int) Response {
	sr := StopReason(st, maxTokens)
	return Response{ID: id, Type: "message", Role: "assistant", Model: model,
		Content:    []Block{{Type: "text", Text: text}},
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

// Stop returns the events after the last token.
func Stop(st apitype.ChatStats, maxTokens int) []Event {
	return []Event{
		{"content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}},
		{"message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": StopReason(st, maxTokens), "stop_sequence": nil},
			"usage": map[string]int{"input_tokens": st.PromptTokens, "output_tokens": st.CompletionTokens}}},
		{"message_stop", map[string]any{"type": "message_stop"}},
	}
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
