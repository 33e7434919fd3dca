package chat

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Tool is a function the model may call: Function is the OpenAI/Ollama
// "function" object as the client sent it ({"name", "description",
// "parameters"}), its members in their order, since templates print it.
type Tool struct {
	Function json.RawMessage
}

// ToolCall is one call of a function, by the model or (in an assistant
// message of the conversation) sent back by the client. Arguments is a
// JSON object.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
}

// ToolMessage is one turn of a conversation with tools: a Message, with
// an assistant message's ToolCalls and, for Role "tool", the call it
// answers.
type ToolMessage struct {
	Role       string // "system", "user", "assistant" or "tool"
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
}

// ErrNoToolCalling is returned for a conversation with tools when the
// model's chat template defines no tool calling this package renders.
var ErrNoToolCalling = errors.New("this model's chat template has no tool calling")

// ToolFamily is a chat template family whose tool calling this package
// renders and parses: what the family's official template produces for a
// conversation with tools, tool calls and tool results.
type ToolFamily int

// The families.
const (
	NoTools     ToolFamily = iota
	Llama3                 // Llama 3.1, 3.2, 3.3: tools in the first user message, JSON {"name","parameters"} calls, ipython results
	Qwen25                 // Qwen 2.5: <tools> in the system prompt (a default one when none), <tool_call>, <tool_response>
	Qwen3                  // Qwen 3: as Qwen 2.5 without the default system prompt, with <think> in the current turn
	Mistral                // Mistral v0.3: [AVAILABLE_TOOLS] [...], [TOOL_CALLS] [...], [TOOL_RESULTS]
	MistralNemo            // Mistral Nemo: as v0.3 without the spaces ([AVAILABLE_TOOLS][...], [INST]...)
)

func (f ToolFamily) String() string {
	return [...]string{"none", "llama3", "qwen2.5", "qwen3", "mistral", "mistral-nemo"}[f]
}

// ToolTemplate renders conversations with tools for one GGUF chat template.
type ToolTemplate struct {
	Family ToolFamily
	// Date is Llama 3's "Today Date" (the template's date_string: today
	// where it calls strftime_now, else its fixed default).
	Date string
	// System is Qwen 2.5's default system prompt, written when the
	// conversation has none.
	System string
}

var (
	llamaDate   = regexp.MustCompile(`set date_string = "([^"]+)"`)
	qwenDefault = regexp.MustCompile(`\{\{-?\s*'((?:[^'\\]|\\.)*)'\s*\}\}\s*\{%-?\s*endif\s*%\}\s*\{\{-?\s*"\\n\\n# Tools`)
)

// ToolTemplateOf recognises a GGUF's tokenizer.chat_template by its
// markers, as a family's official template writes them:
//   - Llama 3.x: <|start_header_id|> with an ipython role and tool_calls;
//   - Qwen: <|im_start|> with <tools> and <tool_call>; Qwen 3 where it
//     handles <think> (reasoning_content), Qwen 2.5 otherwise;
//   - Mistral: [AVAILABLE_TOOLS] and [TOOL_CALLS]; v0.3's writes
//     "[AVAILABLE_TOOLS] [", Nemo's "[AVAILABLE_TOOLS][" (later formats,
//     with [SYSTEM_PROMPT] or [ARGS], are not recognised).
//
// Any other template gives NoTools. now dates Llama 3's system header
// where the template asks for today (strftime_now).
func ToolTemplateOf(tmpl string, now time.Time) ToolTemplate {
	has := func(s ...string) bool {
		for _, x := range s {
			if !strings.Contains(tmpl, x) {
				return false
			}
		}
		return true
	}
	switch {
	case has("<|start_header_id|>", "ipython", "tool_calls"):
		t := ToolTemplate{Family: Llama3, Date: "26 Jul 2024"}
		if m := llamaDate.FindStringSubmatch(tmpl); m != nil {
			t.Date = m[1]
		}
		if has("strftime_now") {
			t.Date = now.Format("02 Jan 2006")
		}
		return t
	case has("<|im_start|>", "<tools>", "<tool_call>"):
		if has("<think>") || has("reasoning_content") {
			return ToolTemplate{Family: Qwen3}
		}
		t := ToolTemplate{Family: Qwen25}
		if m := qwenDefault.FindStringSubmatch(tmpl); m != nil {
			t.System = strings.ReplaceAll(m[1], `\'`, `'`)
		}
		return t
	case has("[SYSTEM_PROMPT]") || has("[ARGS]"):
		return ToolTemplate{} // Mistral Small 3 and later: another format
	case has("[AVAILABLE_TOOLS] [", "[TOOL_CALLS]"):
		return ToolTemplate{Family: Mistral}
	case has("[AVAILABLE_TOOLS][", "[TOOL_CALLS]"):
		return ToolTemplate{Family: MistralNemo}
	}
	return ToolTemplate{}
}

// wholeTool is the tool as the templates see it: {"type": "function",
// "function": {...}}.
func (t Tool) whole() json.RawMessage {
	return json.RawMessage(`{"type":"function","function":` + string(t.Function) + `}`)
}

// Render returns the prompt for msgs with tools (nil: none), ending with
// the opening of an assistant turn. It leaves out the template's leading
// BOS (Llama 3's and Mistral's bos_token): the tokenizer adds it.
func (t ToolTemplate) Render(msgs []ToolMessage, tools []Tool) (string, error) {
	if len(msgs) == 0 {
		return "", ErrNoMessages
	}
	for i, m := range msgs {
		for _, c := range m.ToolCalls {
			if len(c.Arguments) == 0 || c.Arguments[0] != '{' {
				return "", fmt.Errorf("chat: message %d calls %s with arguments that are not a JSON object; send them as one", i, c.Name)
			}
		}
	}
	switch t.Family {
	case Llama3:
		return t.llama3(msgs, tools)
	case Qwen25, Qwen3:
		return t.qwen(msgs, tools)
	case Mistral, MistralNemo:
		return mistral(msgs, tools, t.Family == MistralNemo)
	}
	return "", ErrNoToolCalling
}

func (t ToolTemplate) llama3(msgs []ToolMessage, tools []Tool) (string, error) {
	var b strings.Builder
	sys := ""
	if msgs[0].Role == "system" {
		sys = strings.TrimSpace(msgs[0].Content)
		msgs = msgs[1:]
	}
	b.WriteString("<|start_header_id|>system<|end_header_id|>\n\n")
	if tools != nil {
		b.WriteString("Environment: ipython\n")
	}
	b.WriteString("Cutting Knowledge Date: December 2023\nToday Date: " + t.Date + "\n\n" + sys + "<|eot_id|>")
	if tools != nil {
		if len(msgs) == 0 {
			return "", errors.New("chat: Llama 3 puts the tools in the first user message, and there is none; send one")
		}
		first := strings.TrimSpace(msgs[0].Content)
		msgs = msgs[1:]
		b.WriteString("<|start_header_id|>user<|end_header_id|>\n\n")
		b.WriteString("Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n")
		b.WriteString(`Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.Do not use variables.` + "\n\n")
		for _, tl := range tools {
			s, err := pyJSON(tl.whole(), 4)
			if err != nil {
				return "", err
			}
			b.WriteString(s + "\n\n")
		}
		b.WriteString(first + "<|eot_id|>")
	}
	for _, m := range msgs {
		switch {
		case len(m.ToolCalls) > 0:
			if len(m.ToolCalls) != 1 {
				return "", errors.New("chat: Llama 3's template takes one tool call per assistant message; send each call in a message of its own")
			}
			c := m.ToolCalls[0]
			args, err := pyJSON(c.Arguments, 0)
			if err != nil {
				return "", err
			}
			b.WriteString(`<|start_header_id|>assistant<|end_header_id|>` + "\n\n" + `{"name": "` + c.Name + `", "parameters": ` + args + "}<|eot_id|>")
		case m.Role == "tool" || m.Role == "ipython":
			// The template writes a string result through tojson (a string
			// is iterable to Jinja): quoted.
			var q strings.Builder
			writePyString(&q, m.Content)
			b.WriteString("<|start_header_id|>ipython<|end_header_id|>\n\n" + q.String() + "<|eot_id|>")
		default:
			b.WriteString("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n" + strings.TrimSpace(m.Content) + "<|eot_id|>")
		}
	}
	b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	return b.String(), nil
}

func (t ToolTemplate) qwen(msgs []ToolMessage, tools []Tool) (string, error) {
	var b strings.Builder
	hasSys := msgs[0].Role == "system"
	switch {
	case len(tools) > 0:
		b.WriteString("<|im_start|>system\n")
		if t.Family == Qwen25 {
			if hasSys {
				b.WriteString(msgs[0].Content)
			} else {
				b.WriteString(t.System)
			}
			b.WriteString("\n\n")
		} else if hasSys {
			b.WriteString(msgs[0].Content + "\n\n")
		}
		b.WriteString("# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>")
		for _, tl := range tools {
			s, err := pyJSON(tl.whole(), 0)
			if err != nil {
				return "", err
			}
			b.WriteString("\n" + s)
		}
		b.WriteString("\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n")
	case hasSys:
		b.WriteString("<|im_start|>system\n" + msgs[0].Content + "<|im_end|>\n")
	case t.Family == Qwen25 && t.System != "":
		b.WriteString("<|im_start|>system\n" + t.System + "<|im_end|>\n")
	}
	lastQuery := len(msgs) - 1
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == "user" && !(strings.HasPrefix(m.Content, "<tool_response>") && strings.HasSuffix(m.Content, "</tool_response>")) {
			lastQuery = i
			break
		}
	}
	for i, m := range msgs {
		switch {
		case m.Role == "user" || (m.Role == "system" && i > 0):
			b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
		case m.Role == "assistant" && t.Family == Qwen25:
			if len(m.ToolCalls) == 0 {
				b.WriteString("<|im_start|>assistant\n" + m.Content + "<|im_end|>\n")
				continue
			}
			b.WriteString("<|im_start|>assistant")
			if m.Content != "" {
				b.WriteString("\n" + m.Content)
			}
			for _, c := range m.ToolCalls {
				if err := qwenCall(&b, "\n", c); err != nil {
					return "", err
				}
			}
			b.WriteString("<|im_end|>\n")
		case m.Role == "assistant":
			content, reasoning := m.Content, ""
			if strings.Contains(content, "</think>") {
				before := strings.TrimRight(strings.Split(content, "</think>")[0], "\n")
				parts := strings.Split(before, "<think>")
				reasoning = strings.TrimLeft(parts[len(parts)-1], "\n")
				after := strings.Split(content, "</think>")
				content = strings.TrimLeft(after[len(after)-1], "\n")
			}
			if i > lastQuery && (i == len(msgs)-1 || reasoning != "") {
				b.WriteString("<|im_start|>assistant\n<think>\n" + strings.Trim(reasoning, "\n") + "\n</think>\n\n" + strings.TrimLeft(content, "\n"))
			} else {
				b.WriteString("<|im_start|>assistant\n" + content)
			}
			for j, c := range m.ToolCalls {
				sep := ""
				if j > 0 || content != "" {
					sep = "\n"
				}
				if err := qwenCall(&b, sep, c); err != nil {
					return "", err
				}
			}
			b.WriteString("<|im_end|>\n")
		case m.Role == "tool":
			if i == 0 || msgs[i-1].Role != "tool" {
				b.WriteString("<|im_start|>user")
			}
			b.WriteString("\n<tool_response>\n" + m.Content + "\n</tool_response>")
			if i == len(msgs)-1 || msgs[i+1].Role != "tool" {
				b.WriteString("<|im_end|>\n")
			}
		}
	}
	b.WriteString("<|im_start|>assistant\n")
	return b.String(), nil
}

// qwenCall writes sep, then a call as Qwen's templates do.
func qwenCall(b *strings.Builder, sep string, c ToolCall) error {
	args, err := pyJSON(c.Arguments, 0)
	if err != nil {
		return err
	}
	b.WriteString(sep + "<tool_call>\n{\"name\": \"" + c.Name + "\", \"arguments\": " + args + "}\n</tool_call>")
	return nil
}

// MistralCallID is the id Mistral's template requires of a call: nine
// letters and digits. An id of that form is kept; any other is turned
// into one, the same each time, so that a call and its result match.
func MistralCallID(id string) string {
	if len(id) == 9 && strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == "" {
		return id
	}
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	h := sha256.Sum256([]byte(id))
	out := make([]byte, 9)
	for i := range out {
		out[i] = alnum[int(h[i])%len(alnum)]
	}
	return string(out)
}

// mistral renders v0.3's format, or Nemo's (the same without the spaces
// after its markers, and assistant text as it is).
func mistral(msgs []ToolMessage, tools []Tool, nemo bool) (string, error) {
	sp := " "
	if nemo {
		sp = ""
	}
	var b strings.Builder
	sys, hasSys := "", false
	if msgs[0].Role == "system" {
		sys, hasSys = msgs[0].Content, true
		msgs = msgs[1:]
	}
	lastUser := -1
	for i, m := range msgs {
		if m.Role == "user" {
			lastUser = i
		}
	}
	for i, m := range msgs {
		switch {
		case m.Role == "user":
			if tools != nil && m.Content == msgs[lastUser].Content {
				b.WriteString("[AVAILABLE_TOOLS]" + sp + "[")
				for j, tl := range tools {
					fs, err := objectFields(tl.Function)
					if err != nil {
						return "", err
					}
					b.WriteString(`{"type": "function", "function": {`)
					first := true
					for _, f := range fs {
						if f.Key == "return" {
							continue
						}
						if !first {
							b.WriteString(", ")
						}
						first = false
						var s string
						if json.Unmarshal(f.Value, &s) == nil {
							b.WriteString(`"` + f.Key + `": "` + s + `"`)
							continue
						}
						v, err := pyJSON(f.Value, 0)
						if err != nil {
							return "", err
						}
						b.WriteString(`"` + f.Key + `": ` + v)
					}
					b.WriteString("}}")
					if j < len(tools)-1 {
						b.WriteString(", ")
					} else {
						b.WriteString("]")
					}
				}
				b.WriteString("[/AVAILABLE_TOOLS]")
			}
			if i == len(msgs)-1 && hasSys {
				b.WriteString("[INST]" + sp + sys + "\n\n" + m.Content + "[/INST]")
			} else {
				b.WriteString("[INST]" + sp + m.Content + "[/INST]")
			}
		case len(m.ToolCalls) > 0:
			b.WriteString("[TOOL_CALLS]" + sp + "[")
			for j, c := range m.ToolCalls {
				args, err := pyJSON(c.Arguments, 0)
				if err != nil {
					return "", err
				}
				b.WriteString(`{"name": "` + c.Name + `", "arguments": ` + args + `, "id": "` + MistralCallID(c.ID) + `"}`)
				if j < len(m.ToolCalls)-1 {
					b.WriteString(", ")
				} else {
					b.WriteString("]</s>")
				}
			}
		case m.Role == "assistant" && nemo:
			b.WriteString(m.Content + "</s>")
		case m.Role == "assistant":
			b.WriteString(" " + strings.TrimSpace(m.Content) + "</s>")
		case m.Role == "tool":
			b.WriteString(`[TOOL_RESULTS]` + sp + `{"content": ` + m.Content + `, "call_id": "` + MistralCallID(m.ToolCallID) + `"}[/TOOL_RESULTS]`)
		default:
			return "", fmt.Errorf("chat: Mistral's template takes one system message, first, then user and assistant messages; message %q cannot be written", m.Role)
		}
	}
	return b.String(), nil
}
