package ollama

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
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

// Message is a chat turn: an assistant's may carry ToolCalls, and a
// "tool" message is a call's result (ToolName names the function, as
// newer clients send it).
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Thinking is an answer's reasoning, kept apart from its content (a
	// model whose template reasons apart), as Ollama's "thinking"; one sent
	// back in a conversation is not prompted, as those templates do.
	Thinking  string     `json:"thinking,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	ToolName  string     `json:"tool_name,omitempty"`
}

// ToolCall is a call of a function; its arguments are a JSON object (not
// a string, as OpenAI's are).
type ToolCall struct {
	Function ToolCallFunction `json:"function"`
}

// ToolCallFunction is a ToolCall's function. Index is the call's place in
// the reply.
type ToolCallFunction struct {
	Index     int             `json:"index,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Tool is an entry of tools: {"type": "function", "function": {...}}.
type Tool struct {
	Type     string          `json:"type"`
	Function json.RawMessage `json:"function"`
}

// ChatRequest is POST /api/chat.
type ChatRequest struct {
	Model    string          `json:"model"`
	Messages []Message       `json:"messages"`
	Tools    []Tool          `json:"tools,omitempty"`
	Stream   *bool           `json:"stream,omitempty"` // nil: true
	Format   json.RawMessage `json:"format,omitempty"` // "json" or a JSON schema (schemaOf)
	Think    json.RawMessage `json:"think,omitempty"`  // thinkOf
	Options  Options         `json:"options"`
}

// GenerateRequest is POST /api/generate.
type GenerateRequest struct {
	Model   string          `json:"model"`
	Prompt  string          `json:"prompt"`
	System  string          `json:"system,omitempty"`
	Raw     bool            `json:"raw,omitempty"`
	Stream  *bool           `json:"stream,omitempty"`
	Format  json.RawMessage `json:"format,omitempty"`
	Think   json.RawMessage `json:"think,omitempty"` // thinkOf
	Options Options         `json:"options"`
}

// anyObject is the schema of format "json": any JSON object, as Ollama's
// JSON grammar allows.
const anyObject = `{"type":"object"}`

// schemaOf is the JSON schema a request's format asks the reply to
// follow: "json" is any object, an object is the schema itself, and
// nothing, null or "" is free text, as Ollama reads it.
func schemaOf(format json.RawMessage) (string, error) {
	switch f := strings.TrimSpace(string(format)); {
	case f == "" || f == "null" || f == `""`:
		return "", nil
	case f == `"json"`:
		return anyObject, nil
	case strings.HasPrefix(f, "{"):
		return f, nil // valid JSON: the request decoded
	default:
		return "", bad(`format %s is not supported; send "json" or a JSON schema object`, f)
	}
}

// thinkOf reads Ollama's think: true or false, or a level (low, medium,
// high), which Ollama takes for gpt-oss. A level counts as true: llama.cpp
// renders harmony without the system header that would carry it, so the
// model reasons at its default level. Absent or null: nil.
func thinkOf(raw json.RawMessage) (*bool, error) {
	on, off := true, false
	switch t := strings.TrimSpace(string(raw)); t {
	case "", "null":
		return nil, nil
	case "true", `"low"`, `"medium"`, `"high"`:
		return &on, nil
	case "false":
		return &off, nil
	default:
		return nil, bad("think %s is not supported; send true, false, or for gpt-oss \"low\", \"medium\" or \"high\"", t)
	}
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
	schema, err := schemaOf(r.Format)
	if err != nil {
		return apitype.ChatRequest{}, err
	}
	think, err := thinkOf(r.Think)
	if err != nil {
		return apitype.ChatRequest{}, err
	}
	out := apitype.ChatRequest{Model: r.Model, JSONSchema: schema, Think: think}
	for i, t := range r.Tools {
		var f struct {
			Name string `json:"name"`
		}
		if t.Type != "function" || json.Unmarshal(t.Function, &f) != nil || f.Name == "" {
			return apitype.ChatRequest{}, bad("tools[%d] is not a named function tool; send {\"type\": \"function\", \"function\": {\"name\": …, \"parameters\": …}}", i)
		}
		out.Tools = append(out.Tools, apitype.Tool{Function: string(t.Function)})
	}
	// Ollama's messages carry no call ids: each result answers the
	// oldest call not yet answered, and ids are made up to pair them
	// (Mistral's template writes them).
	var pending []string
	for i, m := range r.Messages {
		switch m.Role {
		case "system", "user", "assistant", "tool":
		default:
			return apitype.ChatRequest{}, bad("message %d has role %q; use system, user, assistant or tool", i, m.Role)
		}
		msg := apitype.ChatMessage{Role: m.Role, Content: m.Content}
		for j, c := range m.ToolCalls {
			args := c.Function.Arguments
			if len(args) == 0 || string(args) == "null" {
				args = json.RawMessage("{}")
			}
			if strings.TrimSpace(string(args))[0] != '{' {
				return apitype.ChatRequest{}, bad("message %d calls %s with arguments that are not a JSON object; send them as an object", i, c.Function.Name)
			}
			id := fmt.Sprintf("call_%d_%d", i, j)
			pending = append(pending, id)
			msg.ToolCalls = append(msg.ToolCalls, apitype.ToolCall{ID: id, Name: c.Function.Name, Arguments: string(args)})
		}
		if m.Role == "tool" && len(pending) > 0 {
			msg.ToolCallID, pending = pending[0], pending[1:]
		}
		out.Messages = append(out.Messages, msg)
	}
	return out, apply(r.Options, &out)
}

// FromGenerate translates /api/generate.
func FromGenerate(r GenerateRequest) (apitype.ChatRequest, error) {
	if r.Prompt == "" {
		return apitype.ChatRequest{}, bad("prompt is empty")
	}
	schema, err := schemaOf(r.Format)
	if err != nil {
		return apitype.ChatRequest{}, err
	}
	think, err := thinkOf(r.Think)
	if err != nil {
		return apitype.ChatRequest{}, err
	}
	out := apitype.ChatRequest{Model: r.Model, JSONSchema: schema, Think: think}
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
	Thinking  string    `json:"thinking,omitempty"` // as Message's
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

// ToolCalls are calls in Ollama's shape.
func ToolCalls(calls []apitype.ToolCall) []ToolCall {
	var out []ToolCall
	for i, c := range calls {
		out = append(out, ToolCall{Function: ToolCallFunction{Index: i, Name: c.Name, Arguments: json.RawMessage(c.Arguments)}})
	}
	return out
}

// GeneratePiece is a streamed token of /api/generate.
func GeneratePiece(model string, at time.Time, text string) GenerateResponse {
	return GenerateResponse{Model: model, CreatedAt: at.UTC(), Response: text}
}

// GenerateDone is the last object of /api/generate.
func GenerateDone(model string, at time.Time, text string, st apitype.ChatStats) GenerateResponse {
	return GenerateResponse{Model: model, CreatedAt: at.UTC(), Response: text, Done: true, Final: final(st)}
}

// Version is the Ollama version /api/version reports: that of the pinned
// github.com/ollama/ollama module (go.mod), whose api/types.go these
// answers follow, so that a client checking for a minimum version finds the
// API it was written for. TestVersionIsPinnedModule keeps the two equal.
const Version = "0.17.4"

// VersionResponse is GET /api/version.
type VersionResponse struct {
	Version string `json:"version"`
}

// Model is a model this API serves, as the agent found it.
type Model struct {
	Name     string
	Size     int64 // bytes of the file
	Modified time.Time
	// Digest identifies the file: the blob's SHA-256 for a model in
	// Ollama's store, else a hash of its path, size and time (hashing a
	// model of many GB on every list would take minutes).
	Digest        string
	Arch          string // general.architecture
	Params        int64  // weights, 0 when unknown
	Quant         string // the dominant weight type, as "q4_k"
	ContextLength int    // the context it was trained for, 0 when unknown
	Tools         bool   // its chat template has tool calling (app/api/tools.go)
}

// Details describe a model file (Ollama's api.ModelDetails).
type Details struct {
	ParentModel       string   `json:"parent_model"`
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

func (m Model) details() Details {
	d := Details{Format: "gguf", Family: m.Arch, ParameterSize: HumanNumber(m.Params), QuantizationLevel: strings.ToUpper(m.Quant)}
	if m.Arch != "" {
		d.Families = []string{m.Arch}
	}
	return d
}

// HumanNumber writes a parameter count as Ollama does (format.HumanNumber):
// "8B", "1.2B", "260K"; "" for 0.
func HumanNumber(n int64) string {
	f := float64(n)
	whole := func(v float64) bool { return v == math.Floor(v) }
	switch {
	case n <= 0:
		return ""
	case n >= 1e9:
		if whole(f / 1e9) {
			return fmt.Sprintf("%.0fB", f/1e9)
		}
		return fmt.Sprintf("%.1fB", f/1e9)
	case n >= 1e6:
		if whole(f / 1e6) {
			return fmt.Sprintf("%.0fM", f/1e6)
		}
		return fmt.Sprintf("%.2fM", f/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.0fK", f/1e3)
	}
	return fmt.Sprint(n)
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
func TagsOf(ms []Model) Tags {
	t := Tags{Models: []Tag{}}
	for _, m := range ms {
		t.Models = append(t.Models, Tag{Name: m.Name, Model: m.Name, ModifiedAt: m.Modified.UTC(), Size: m.Size, Digest: m.Digest, Details: m.details()})
	}
	return t
}

// ShowRequest is POST /api/show; Name is the older spelling of Model.
type ShowRequest struct {
	Model   string `json:"model"`
	Name    string `json:"name"`
	Verbose bool   `json:"verbose"`
}

// Asked is the model a show request names.
func (r ShowRequest) Asked() string {
	if r.Model != "" {
		return r.Model
	}
	return r.Name
}

// ShowResponse is POST /api/show's answer: the fields of Ollama's that a
// GGUF alone can fill. ModelInfo is never null (Ollama: several
// integrations crash on a missing one).
type ShowResponse struct {
	License      string         `json:"license,omitempty"`
	Details      Details        `json:"details"`
	ModelInfo    map[string]any `json:"model_info"`
	Capabilities []string       `json:"capabilities"`
	ModifiedAt   time.Time      `json:"modified_at"`
}

// Show describes m; info is the file's metadata (GGUF key-values, long
// arrays already emptied as Ollama does without verbose).
func Show(m Model, info map[string]any) ShowResponse {
	if info == nil {
		info = map[string]any{}
	}
	if m.Params > 0 {
		info["general.parameter_count"] = m.Params
	}
	lic, _ := info["general.license"].(string)
	// Chat and completion, and tools where its template has tool calling,
	// are what this API does with a model (no vision or embeddings yet).
	caps := []string{"completion"}
	if m.Tools {
		caps = append(caps, "tools")
	}
	return ShowResponse{License: lic, Details: m.details(), ModelInfo: info, Capabilities: caps, ModifiedAt: m.Modified.UTC()}
}

// Running is an entry of /api/ps (Ollama's api.ProcessModelResponse).
type Running struct {
	Name          string    `json:"name"`
	Model         string    `json:"model"`
	Size          int64     `json:"size"`
	Digest        string    `json:"digest"`
	Details       Details   `json:"details"`
	ExpiresAt     time.Time `json:"expires_at"`
	SizeVRAM      int64     `json:"size_vram"`
	ContextLength int       `json:"context_length"`
}

// ProcessResponse is GET /api/ps.
type ProcessResponse struct {
	Models []Running `json:"models"`
}

// PS lists the loaded model, if any (nil: none). The engine keeps a model
// until another is asked for, so expires_at is keptUntil, a time far
// ahead, as Ollama answers for keep_alive -1.
func PS(m *Model, contextLength int, keptUntil time.Time) ProcessResponse {
	p := ProcessResponse{Models: []Running{}}
	if m != nil {
		p.Models = append(p.Models, Running{Name: m.Name, Model: m.Name, Size: m.Size, Digest: m.Digest, Details: m.details(),
			ExpiresAt: keptUntil.UTC(), ContextLength: contextLength})
	}
	return p
}

// NotFound is the 404 of a model this device does not have: Ollama's
// "model 'x' not found" (clients look for it), and where the names are.
func NotFound(model string) ErrorBody {
	return ErrorBody{Error: fmt.Sprintf("model '%s' not found; GET /api/tags lists the models this device has", model)}
}

// ErrorBody is Ollama's error answer.
type ErrorBody struct {
	Error string `json:"error"`
}
