package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"homering/app/api/apitype"
	"homering/engine/chat"
	"homering/engine/gguf"
)

// Tool calling on the compatible APIs. llama.cpp's template function takes
// only roles and contents, so a request with tools (or with tool calls and
// results in its conversation) is rendered here by the model's template
// family (engine/chat.ToolTemplate: Llama 3.1-3.3, Qwen 2.5/3, Mistral
// v0.3 and Nemo, recognised by the GGUF template's markers) and sent to the engine
// as a raw prompt; its reply goes through the family's ToolParser, which
// streams the content and hands the calls to the API's own shape at the
// end (app/api). A model whose template has none of these gets the API's 400.

// ToolParser parses a reply rendered by RenderTools: its content streams,
// its calls come at the end (engine/chat's).
type ToolParser = chat.ToolParser

// toolTemplates caches each GGUF's tool family by path, size and time.
type toolTemplates struct {
	mu sync.Mutex
	m  map[string]toolTemplateEntry
}

type toolTemplateEntry struct {
	size int64
	mod  time.Time
	tmpl string
}

var toolCache toolTemplates

// chatTemplate is the GGUF's tokenizer.chat_template ("" when none).
func (c *toolTemplates) chatTemplate(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	e, ok := c.m[path]
	c.mu.Unlock()
	if ok && e.size == st.Size() && e.mod.Equal(st.ModTime()) {
		return e.tmpl, nil
	}
	f, err := gguf.Open(path)
	if err != nil {
		return "", err
	}
	tmpl, _ := f.String("tokenizer.chat_template")
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]toolTemplateEntry{}
	}
	c.m[path] = toolTemplateEntry{size: st.Size(), mod: st.ModTime(), tmpl: tmpl}
	c.mu.Unlock()
	return tmpl, nil
}

// HasToolCalling says whether the GGUF at path has a chat template whose
// tool calling RenderTools renders (Ollama's "tools" capability).
func HasToolCalling(path string) bool {
	if path == "" {
		return false
	}
	src, err := toolCache.chatTemplate(path)
	return err == nil && chat.ToolTemplateOf(src, time.Now()).Family != chat.NoTools
}

// usesTools says whether req needs the tool renderer: tools, or tool calls
// or results in its conversation.
func usesTools(req apitype.ChatRequest) bool {
	if len(req.Tools) > 0 {
		return true
	}
	for _, m := range req.Messages {
		if len(m.ToolCalls) > 0 || m.Role == "tool" {
			return true
		}
	}
	return false
}

// ToolsError is a request with tools that this model (its template) cannot
// take; its text is the sentence the client gets with the API's 400.
type ToolsError struct{ msg string }

func (e *ToolsError) Error() string { return e.msg }

// RenderTools turns a request that uses tools into a raw prompt rendered
// by the template family of the GGUF at path, and returns the parser of
// its reply (nil, and req unchanged, for a request without tools).
func RenderTools(req *apitype.ChatRequest, path, model string, now time.Time) (*ToolParser, error) {
	if !usesTools(*req) || path == "" {
		return nil, nil
	}
	src, err := toolCache.chatTemplate(path)
	if err != nil {
		return nil, &ToolsError{fmt.Sprintf("The chat template of %s cannot be read (%s); choose another model.", model, strings.TrimSuffix(said(err), "."))}
	}
	tt := chat.ToolTemplateOf(src, now)
	if tt.Family == chat.NoTools {
		return nil, &ToolsError{fmt.Sprintf("This model's chat template has no tool calling (%s); choose a model whose template defines tools (Llama 3.1-3.3, Qwen 2.5/3, Mistral v0.3 or Nemo) or send the request without tools.", model)}
	}
	var msgs []chat.ToolMessage
	if req.System != "" && (len(req.Messages) == 0 || req.Messages[0].Role != "system") {
		msgs = append(msgs, chat.ToolMessage{Role: "system", Content: req.System})
	}
	for _, m := range req.Messages {
		tm := chat.ToolMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			tm.ToolCalls = append(tm.ToolCalls, chat.ToolCall{ID: c.ID, Name: c.Name, Arguments: json.RawMessage(c.Arguments)})
		}
		msgs = append(msgs, tm)
	}
	var tools []chat.Tool
	for _, t := range req.Tools {
		tools = append(tools, chat.Tool{Function: json.RawMessage(t.Function)})
	}
	prompt, err := tt.Render(msgs, tools)
	if err == nil && req.ForceCall {
		// The reply is a call in the family's format, by grammar.
		var fc chat.ForcedCall
		fc, err = tt.ForceCall(tools, req.ForceName)
		req.JSONSchema, req.SchemaBefore, req.SchemaAfter = string(fc.Schema), fc.Before, fc.After
	}
	if err != nil {
		s := strings.TrimPrefix(err.Error(), "chat: ")
		return nil, &ToolsError{strings.ToUpper(s[:1]) + s[1:] + "."}
	}
	prompt += chat.ReplyOpening(src, thinkMode(req.Think))
	req.Prompt, req.Messages, req.System, req.Tools = prompt, nil, "", nil
	return tt.Parser(), nil
}

// ThinkParser splits a reply into its thinking and its answer (engine/chat's).
type ThinkParser = chat.ThinkParser

// NewThinkParser returns the parser of a reply rendered by the chat
// template of the GGUF at path for a request whose think is think
// (ChatRequest.Think), when that template's family reasons apart from its
// answer (Qwen 3, QwQ and R1's <think>, gpt-oss's harmony channels); nil
// otherwise, and then the reply passes through untouched. It starts where
// the prompt's ReplyOpening leaves the reply.
func NewThinkParser(path string, think *bool) *ThinkParser {
	if path == "" {
		return nil
	}
	src, err := toolCache.chatTemplate(path)
	if err != nil {
		return nil
	}
	f := chat.ThinkFormatOf(src)
	if f == chat.NoThinking {
		return nil
	}
	return chat.NewThinkParserAfter(f, chat.ReplyOpening(src, thinkMode(think)))
}

// Thinks says whether the GGUF at path has a chat template whose replies
// reason apart from their answer (Ollama's "thinking" capability).
func Thinks(path string) bool {
	if path == "" {
		return false
	}
	src, err := toolCache.chatTemplate(path)
	return err == nil && chat.ThinkFormatOf(src) != chat.NoThinking
}

// thinkMode is a request's think as engine/chat's mode.
func thinkMode(think *bool) chat.ThinkMode {
	switch {
	case think == nil:
		return chat.ThinkDefault
	case *think:
		return chat.ThinkOn
	}
	return chat.ThinkOff
}

// replyOpening is what follows the generation prompt of the GGUF at path's
// template for req (engine/chat.ReplyOpening; "" when unreadable).
func replyOpening(path string, think *bool) string {
	if path == "" {
		return ""
	}
	src, err := toolCache.chatTemplate(path)
	if err != nil {
		return ""
	}
	return chat.ReplyOpening(src, thinkMode(think))
}
