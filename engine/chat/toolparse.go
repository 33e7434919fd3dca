package chat

import (
	"bytes"
	"encoding/json"
	"strings"
)

// ToolParser reads a reply as it streams and takes the family's tool
// calls out of it. Feed returns the text that is surely content, holding
// back any end of it that may be the start of a call marker, so that a
// streamed reply never shows half a marker; once a call starts, the rest
// is held until Finish parses it. A call that does not parse is given
// back as content.
type ToolParser struct {
	family  ToolFamily
	held    string // content that may start a call
	calls   string // the reply from its first call on
	inCalls bool
	decided bool // Llama 3: the reply is known to be content (it did not open with a call)
}

// Parser returns a parser of replies in t's format.
func (t ToolTemplate) Parser() *ToolParser { return &ToolParser{family: t.Family} }

// marker is the text that opens the family's calls ("" for Llama 3, whose
// call is a reply that is one JSON object).
func (p *ToolParser) marker() string {
	switch p.family {
	case Qwen25, Qwen3:
		return "<tool_call>"
	case Mistral, MistralNemo:
		return "[TOOL_CALLS]"
	}
	return ""
}

// pythonTag opens a Llama 3 call in some fine-tunes' replies.
const pythonTag = "<|python_tag|>"

// Feed takes the next piece of the reply and returns the content that can
// be shown now (often "").
func (p *ToolParser) Feed(text string) string {
	if p.inCalls {
		p.calls += text
		return ""
	}
	p.held += text
	if p.family == Llama3 {
		return p.feedLlama()
	}
	mk := p.marker()
	if i := strings.Index(p.held, mk); i >= 0 {
		out := p.held[:i]
		p.calls, p.held, p.inCalls = p.held[i:], "", true
		return out
	}
	keep := partialSuffix(p.held, mk)
	out := p.held[:len(p.held)-keep]
	p.held = p.held[len(p.held)-keep:]
	return out
}

func (p *ToolParser) feedLlama() string {
	if p.decided {
		out := p.held
		p.held = ""
		return out
	}
	s := strings.TrimLeft(p.held, " \t\r\n")
	switch {
	case s == "":
		return "" // only blank so far
	case s[0] == '{' || strings.HasPrefix(s, pythonTag):
		p.calls, p.held, p.inCalls = p.held, "", true
		return ""
	case strings.HasPrefix(pythonTag, s):
		return "" // may be the tag
	}
	p.decided = true
	out := p.held
	p.held = ""
	return out
}

// partialSuffix is the length of the longest end of s that is a proper
// start of mk.
func partialSuffix(s, mk string) int {
	for n := min(len(mk)-1, len(s)); n > 0; n-- {
		if strings.HasSuffix(s, mk[:n]) {
			return n
		}
	}
	return 0
}

// Finish ends the reply: the content still held back, and the calls. When
// the calls do not parse, they are content and calls is nil.
func (p *ToolParser) Finish() (content string, calls []ToolCall) {
	content, p.held = p.held, ""
	if !p.inCalls {
		return content, nil
	}
	var rest string
	var ok bool
	switch p.family {
	case Llama3:
		calls, ok = parseLlama(p.calls)
	case Qwen25, Qwen3:
		calls, rest, ok = parseQwen(p.calls)
	case Mistral, MistralNemo:
		calls, ok = parseMistral(p.calls)
	}
	if !ok || len(calls) == 0 {
		return content + p.calls, nil
	}
	return content + rest, calls
}

// callJSON is a call as the families write it: arguments (Qwen, Mistral)
// or parameters (Llama 3), an object or a string holding one.
type callJSON struct {
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	Parameters json.RawMessage `json:"parameters"`
	ID         string          `json:"id"`
}

func (c callJSON) call() (ToolCall, bool) {
	args := c.Arguments
	if len(args) == 0 {
		args = c.Parameters
	}
	args = bytes.TrimSpace(args)
	if len(args) > 0 && args[0] == '"' {
		var s string
		if json.Unmarshal(args, &s) != nil {
			return ToolCall{}, false
		}
		args = json.RawMessage(strings.TrimSpace(s))
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	var compact bytes.Buffer
	if c.Name == "" || args[0] != '{' || json.Compact(&compact, args) != nil {
		return ToolCall{}, false
	}
	// As the APIs send arguments: compact JSON, whatever spacing the
	// model (or its grammar) wrote.
	return ToolCall{ID: c.ID, Name: c.Name, Arguments: compact.Bytes()}, true
}

// parseLlama reads one JSON call, or several separated by ";".
func parseLlama(s string) ([]ToolCall, bool) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, pythonTag)
	dec := json.NewDecoder(strings.NewReader(s))
	var calls []ToolCall
	for {
		var c callJSON
		if err := dec.Decode(&c); err != nil {
			return nil, false
		}
		tc, ok := c.call()
		if !ok {
			return nil, false
		}
		calls = append(calls, tc)
		rest := strings.TrimSpace(s[dec.InputOffset():])
		rest = strings.TrimSpace(strings.TrimPrefix(rest, ";"))
		if rest == "" {
			return calls, true
		}
		s = rest
		dec = json.NewDecoder(strings.NewReader(s))
	}
}

// parseQwen reads <tool_call>{...}</tool_call> blocks (the last may lack
// its end tag: the model stopped there); text after the last call is rest.
func parseQwen(s string) (calls []ToolCall, rest string, ok bool) {
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		body, found := strings.CutPrefix(s, "<tool_call>")
		if !found {
			return calls, s, true
		}
		end := strings.Index(body, "</tool_call>")
		s = ""
		if end >= 0 {
			body, s = body[:end], body[end+len("</tool_call>"):]
		}
		var c callJSON
		if json.Unmarshal([]byte(strings.TrimSpace(body)), &c) != nil {
			return nil, "", false
		}
		tc, ok := c.call()
		if !ok {
			return nil, "", false
		}
		calls = append(calls, tc)
	}
}

// parseMistral reads [TOOL_CALLS] [{...}, ...] (or one object).
func parseMistral(s string) ([]ToolCall, bool) {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "[TOOL_CALLS]"))
	var list []callJSON
	if json.Unmarshal([]byte(s), &list) != nil {
		var one callJSON
		if json.Unmarshal([]byte(s), &one) != nil {
			return nil, false
		}
		list = []callJSON{one}
	}
	var calls []ToolCall
	for _, c := range list {
		tc, ok := c.call()
		if !ok {
			return nil, false
		}
		calls = append(calls, tc)
	}
	return calls, true
}
