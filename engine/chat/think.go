package chat

import "strings"

// ThinkFormat is how a family's reply carries its reasoning apart from its
// answer.
type ThinkFormat int

// The formats.
const (
	NoThinking ThinkFormat = iota
	ThinkTags              // Qwen 3, QwQ, DeepSeek-R1: <think>…</think> then the answer
	Harmony                // gpt-oss: <|channel|>analysis<|message|>…<|end|>, then the final channel
)

// ThinkFormatOf recognises the reasoning format of a GGUF chat template by
// the markers its family's template writes.
func ThinkFormatOf(tmpl string) ThinkFormat {
	switch {
	case strings.Contains(tmpl, "<|channel|>") && strings.Contains(tmpl, "<|start|>"):
		return Harmony
	case strings.Contains(tmpl, "<think>") || strings.Contains(tmpl, "</think>"):
		return ThinkTags
	}
	return NoThinking
}

// ThinkMode is what a request asks of a reasoning model (Ollama's think).
type ThinkMode int

// The modes.
const (
	ThinkDefault ThinkMode = iota // as the template does by default
	ThinkOn                       // reason first (the default of every reasoning family)
	ThinkOff                      // answer without reasoning, where the template can
)

// Openings of a reply in the ThinkTags families.
const (
	thinkOpen  = "<think>\n"
	thinkEmpty = "<think>\n\n</think>\n\n"
)

// ReplyOpening is the text a reply starts with after template tmpl's
// generation prompt, in mode. llama.cpp renders a GGUF's template from its
// family's pattern, not its Jinja, and stops at the assistant's turn; two
// reasoning families write more there. Templates that force thinking (the
// DeepSeek-R1 distills, QwQ: the Jinja string ends in "<think>\n") open the
// block in the prompt, so the reply is thinking from its first token; Qwen
// 3 with thinking off (its enable_thinking=false) writes an empty block, so
// the reply is the answer. Everything else: "".
func ReplyOpening(tmpl string, mode ThinkMode) string {
	if ThinkFormatOf(tmpl) != ThinkTags {
		return ""
	}
	switch {
	case opensThink(tmpl):
		return thinkOpen // the forced block cannot be switched off
	case mode == ThinkOff && strings.Contains(tmpl, "enable_thinking"):
		return thinkEmpty
	}
	return ""
}

// CanSkipThinking says whether a template's model can be asked to answer
// without reasoning (ReplyOpening writes it an empty block).
func CanSkipThinking(tmpl string) bool {
	return ReplyOpening(tmpl, ThinkOff) == thinkEmpty
}

// opensThink: a Jinja string literal of the template's generation prompt
// (what follows its last add_generation_prompt) ends in "<think>\n",
// written with an escaped or a real newline, as R1 distills' and QwQ's do.
// Qwen 3's empty block goes on after "<think>\n", and its history's
// "<think>\n' + reasoning_content" comes before the generation prompt.
func opensThink(tmpl string) bool {
	i := strings.LastIndex(tmpl, "add_generation_prompt")
	if i < 0 {
		return false
	}
	tmpl = tmpl[i:]
	for _, lit := range []string{"<think>\\n'", "<think>\\n\"", "<think>\n'", "<think>\n\""} {
		if strings.Contains(tmpl, lit) {
			return true
		}
	}
	return false
}

// ThinkParser splits a streamed reply into its thinking and its answer.
// Like ToolParser it holds back any end of the text that may be the start
// of a marker, so that neither part ever shows half a marker.
type ThinkParser struct {
	format ThinkFormat
	held   string
	state  thinkState
	think  bool // Harmony: the current message's channel is analysis
}

type thinkState int

const (
	thinkStart  thinkState = iota // before the reply's first text: <think> or a harmony header may come
	thinkInside                   // inside <think>…</think>
	thinkAfter                    // just after </think>: the newlines before the answer are dropped
	thinkAnswer                   // the answer: passed through
	harmonyHead                   // a harmony header, up to <|message|>
	harmonyBody                   // a harmony message's text
)

// Harmony's markers. llama.cpp always renders <|channel|>, <|message|> and
// <|start|>; <|end|> may or may not come through, so a message also ends
// where the next <|start|> begins.
var harmonyEnds = []string{"<|end|>", "<|start|>", "<|return|>", "<|call|>"}

// maxHead bounds a harmony header held back: text that long with no
// <|message|> is not a header and is given back as answer.
const maxHead = 256

// NewThinkParser returns a parser of replies in format f (NoThinking: one
// that passes everything through as the answer).
func NewThinkParser(f ThinkFormat) *ThinkParser {
	return NewThinkParserAfter(f, "")
}

// NewThinkParserAfter is NewThinkParser for a reply whose prompt ended in
// opening (ReplyOpening's): inside an opened block the reply starts as
// thinking; after an empty one it is the answer.
func NewThinkParserAfter(f ThinkFormat, opening string) *ThinkParser {
	p := &ThinkParser{format: f}
	switch {
	case f == NoThinking || opening == thinkEmpty:
		p.state = thinkAnswer
	case opening == thinkOpen:
		p.state = thinkInside
	}
	return p
}

// Feed takes the next piece of the reply and returns the thinking and the
// answer that can be shown now.
func (p *ThinkParser) Feed(text string) (thinking, answer string) {
	p.held += text
	var tb, ab strings.Builder
	for {
		progressed := p.step(&tb, &ab, false)
		if !progressed {
			return tb.String(), ab.String()
		}
	}
}

// Finish ends the reply: what was still held back, as thinking or answer.
func (p *ThinkParser) Finish() (thinking, answer string) {
	var tb, ab strings.Builder
	for p.step(&tb, &ab, true) {
	}
	return tb.String(), ab.String()
}

// step consumes what it can of held and says whether it changed state or
// consumed anything; at the end (final) nothing is held back.
func (p *ThinkParser) step(tb, ab *strings.Builder, final bool) bool {
	if p.held == "" {
		return false
	}
	switch p.state {
	case thinkAnswer:
		ab.WriteString(p.held)
		p.held = ""
		return true
	case thinkStart:
		if p.format == Harmony {
			s := p.held
			if strings.HasPrefix(s, "<|channel|>") || strings.HasPrefix(s, "<|start|>") {
				p.state = harmonyHead
				return true
			}
			if !final && (strings.HasPrefix("<|channel|>", s) || strings.HasPrefix("<|start|>", s)) {
				return false
			}
			p.state = thinkAnswer // a plain reply
			return true
		}
		s := strings.TrimLeft(p.held, " \t\r\n")
		if rest, ok := strings.CutPrefix(s, "<think>"); ok {
			p.held, p.state = rest, thinkInside
			return true
		}
		if !final && strings.HasPrefix("<think>", s) {
			return false
		}
		p.state = thinkAnswer
		return true
	case thinkInside:
		if i := strings.Index(p.held, "</think>"); i >= 0 {
			tb.WriteString(p.held[:i])
			p.held, p.state = p.held[i+len("</think>"):], thinkAfter
			return true
		}
		keep := 0
		if !final {
			keep = partialSuffix(p.held, "</think>")
		}
		if keep == len(p.held) {
			return false
		}
		tb.WriteString(p.held[:len(p.held)-keep])
		p.held = p.held[len(p.held)-keep:]
		return true
	case thinkAfter:
		p.held = strings.TrimLeft(p.held, "\n")
		if p.held == "" {
			return false
		}
		p.state = thinkAnswer
		return true
	case harmonyHead:
		i := strings.Index(p.held, "<|message|>")
		if i < 0 {
			if final || len(p.held) > maxHead {
				p.state = thinkAnswer // not a header after all
				return true
			}
			return false
		}
		head := p.held[:i]
		p.think = false
		if _, ch, ok := strings.Cut(head, "<|channel|>"); ok {
			p.think = strings.HasPrefix(ch, "analysis")
		}
		p.held, p.state = p.held[i+len("<|message|>"):], harmonyBody
		return true
	case harmonyBody:
		out := tb
		if !p.think {
			out = ab
		}
		end, mk := -1, ""
		for _, m := range harmonyEnds {
			if j := strings.Index(p.held, m); j >= 0 && (end < 0 || j < end) {
				end, mk = j, m
			}
		}
		if end >= 0 {
			out.WriteString(p.held[:end])
			p.held, p.state = p.held[end:], harmonyHead
			if mk != "<|start|>" {
				p.held = p.held[len(mk):]
				if p.held == "" {
					p.state = thinkStart // what follows may be another header
				}
			}
			return true
		}
		keep := 0
		if !final {
			for _, m := range harmonyEnds {
				keep = max(keep, partialSuffix(p.held, m))
			}
		}
		if keep == len(p.held) {
			return false
		}
		out.WriteString(p.held[:len(p.held)-keep])
		p.held = p.held[len(p.held)-keep:]
		return true
	}
	return false
}
