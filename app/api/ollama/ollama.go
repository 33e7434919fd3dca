package ollama

import (
	"errors"
	"fmt"
	"time"

	"homering/app/api/apitype"
)

// ErrRequest is wrapped by every refused request.
var ErrRequest = errors.New("ollama: invalid request")

func bad(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRequest}, a...)...)
}

// Options are the sampling and size options.
type Options struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	TopK        *int     `json:"top_k,omitempty"`
	NumPredict  *int     `json:"num_predict,omitempty"`
	NumCtx      *int     `json:"num_ctx,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
}

// Message is a chat turn.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatRequest is POST /api/chat.
type ChatRequest struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Stream   *bool     `json:"stream,omitempty"` // nil: true
	Options  Options   `json:"options"`
}

// GenerateRequest is POST /api/generate.
type GenerateRequest struct {
	Model   string  `json:"model"`
	Prompt  string  `json:"prompt"`
	System  string  `json:"system,omitempty"`
	Raw     bool    `json:"raw,omitempty"`
	Stream  *bool   `json:"stream,omitempty"`
	Options Options `json:"options"`
}

// Streams reports whether a request with this stream field streams.
func Streams(stream *bool) bool { return stream == nil || *stream }

func apply(o Options, r *apitype.ChatRequest) error {
	r.Temperature, r.TopP, r.TopK, r.Seed = o.Temperature, o.TopP, o.TopK, o.Seed
	if o.NumPredict != nil && *o.NumPredict > 0 { // Ollama: -1 and 0 mean no limit
		r.MaxTokens = *o.NumPredict
	}
	if o.NumCtx != nil {
		if *o.NumCtx < 0 {
			return bad("num_ctx %d is negative", *o.NumCtx)
		}
		r.NumCtx = *o.NumCtx
	}
	if o.Temperature != nil && *o.Temperature < 0 {
		return bad("temperature %g is negative", *o.Temperature)
	}
	return nil
}

// FromChat translates /api/chat.
func FromChat(r ChatRequest) (apitype.ChatRequest, error) {
	if len(r.Messages) == 0 {
		return apitype.ChatRequest{}, bad("messages is empty; send at least one message")
	}
	out := apitype.ChatRequest{Model: r.Model}
	for i, m := range r.Messages {
		switch m.Role {
		case "system", "user", "assistant":
		default:
			return apitype.ChatRequest{}, bad("message %d has role %q; use system, user or assistant", i, m.Role)
		}
		out.Messages = append(out.Messages, apitype.ChatMessage{Role: m.Role, Content: m.Content})
	}
	return out, apply(r.Options, &out)
}

// FromGenerate translates /api/generate.
func FromGenerate(r GenerateRequest) (apitype.ChatRequest, error) {
	if r.Prompt == "" {
		return apitype.ChatRequest{}, bad("prompt is empty")
	}
	out := apitype.ChatRequest{Model: r.Model}
	if r.Raw {
		out.Prompt = r.Prompt
	} else {
		out.System = r.System
		out.Messages = []apitype.ChatMessage{{Role: "user", Content: r.Prompt}}
	}
	return out, apply(r.Options, &out)
}

// DoneReason maps a stop reason to Ollama's.
func DoneReason(stopReason string) string {
	if stopReason == "length" {
		return "length"
	}
	return "stop"
}

// Final are the fields of the last object of a response.
type Final struct {
	DoneReason         string `json:"done_reason,omitempty"`
	TotalDuration      int64  `json:"total_duration,omitempty"`
	PromptEvalCount    int    `json:"prompt_eval_count,omitempty"`
	PromptEvalDuration int64  `json:"prompt_eval_duration,omitempty"`
	EvalCount          int    `json:"eval_count,omitempty"`
	EvalDuration       int64  `json:"eval_duration,omitempty"`
}

func final(st apitype.ChatStats) Final {
	ns := func(ms float64) int64 { return int64(ms * 1e6) }
	f := Final{DoneReason: DoneReason(st.StopReason), TotalDuration: ns(st.TotalMS),
		PromptEvalCount: st.PromptTokens, PromptEvalDuration: ns(st.PromptMS), EvalCount: st.CompletionTokens}
	if st.TokensPerSecond > 0 {
		f.EvalDuration = int64(float64(st.CompletionTokens) / st.TokensPerSecond * 1e9)
	}
	return f
}

// ChatResponse is one object of /api/chat.
type ChatResponse struct {
	Model     string    `json:"model"`
	CreatedAt time.Time `json:"created_at"`
	Message   Message   `json:"message"`
	Done      bool      `json:"done"`
	Final
}

// GenerateResponse is one object of /api/generate.
type GenerateResponse struct {
	Model     string    `json:"model"`
	CreatedAt time.Time `json:"created_at"`
	Response  string    `json:"response"`
	Done      bool      `json:"done"`
	Final
}

// ChatPiece is a streamed token of /api/chat.
func ChatPiece(model string, at time.Time, text string) ChatResponse {
	return ChatResponse{Model: model, CreatedAt: at.UTC(), Message: Message{Role: "assistant", Content: text}}
}

// ChatDone is the last object of /api/chat; text is the whole answer when
// not streaming, "" when streaming.
func ChatDone(model string, at time.Time, text string, st apitype.ChatStats) ChatResponse {
	return ChatResponse{Model: model, CreatedAt: at.UTC(), Message: Message{Role: "assistant", Content: text}, Done: true, Final: final(st)}
}

// GeneratePiece is a streamed token of /api/generate.
func GeneratePiece(model string, at time.Time, text string) GenerateResponse {
	return GenerateResponse{Model: model, CreatedAt: at.UTC(), Response: text}
}

// GenerateDone is the last object of /api/generate.
func GenerateDone(model string, at time.Time, text string, st apitype.ChatStats) GenerateResponse {
	return GenerateResponse{Model: model, CreatedAt: at.UTC(), Response: text, Done: true, Final: final(st)}
}

// Details describe a model file.
type Details struct {
	Format string `json:"format"`
	Family string `json:"family"`
}

// Tag is an entry of /api/tags.
type Tag struct {
	Name       string    `json:"name"`
	Model      string    `json:"model"`
	ModifiedAt time.Time `json:"modified_at"`
	Size       int64     `json:"size"`
	Digest     string    `json:"digest"`
	Details    Details   `json:"details"`
}

// Tags is GET /api/tags.
type Tags struct {
	Models []Tag `json:"models"`
}

// TagsOf lists the served models.
func TagsOf(ms []apitype.ServedModel) Tags {
	t := Tags{Models: []Tag{}}
	for _, m := range ms {
		t.Models = append(t.Models, Tag{Name: m.Name, Model: m.Name, ModifiedAt: time.Unix(m.Modified, 0).UTC(), Size: m.Size, Details: Details{Format: "gguf"}})
	}
	return t
}

// ErrorBody is Ollama's error answer.
type ErrorBody struct {
	Error string `json:"error"`
}
