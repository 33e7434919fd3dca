package chat

import (
	"strings"
	"testing"
)

// TestThinkParser feeds each reply whole, split in two at every byte, and
// a byte at a time: the thinking and the answer are always the same, and
// no streamed piece of either holds a marker or part of one.
func TestThinkParser(t *testing.T) {
	tests := []struct {
		name          string
		format        ThinkFormat
		reply         string
		think, answer string
	}{
		{"qwen3 thinks then answers", ThinkTags, "<think>\nAdd 2 and 2.\n</think>\n\nIt is 4.", "\nAdd 2 and 2.\n", "It is 4."},
		{"qwen3 empty thinking", ThinkTags, "<think>\n\n</think>\n\n4", "\n\n", "4"},
		{"qwen3 no thinking", ThinkTags, "Just 4 < 5.", "", "Just 4 < 5."},
		{"qwen3 cut off while thinking", ThinkTags, "<think>still </thi", "still </thi", ""},
		{"a later <think> is answer", ThinkTags, "4 <think>x</think>", "", "4 <think>x</think>"},
		{"no thinking format", NoThinking, "<think>x</think>y", "", "<think>x</think>y"},
		{"harmony analysis then final", Harmony,
			"<|channel|>analysis<|message|>User asks 2+2.<|end|><|start|>assistant<|channel|>final<|message|>4.", "User asks 2+2.", "4."},
		{"harmony without <|end|>", Harmony,
			"<|channel|>analysis<|message|>Think.<|start|>assistant<|channel|>final<|message|>Answer", "Think.", "Answer"},
		{"harmony final only", Harmony, "<|channel|>final<|message|>Hi <|there", "", "Hi <|there"},
		{"harmony plain reply", Harmony, "Hello.", "", "Hello."},
	}
	markers := []string{"<think>", "</think>", "<|channel|>", "<|message|>", "<|start|>", "<|end|>"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(how string, pieces []string) {
				p := NewThinkParser(tt.format)
				var think, answer string
				for _, s := range pieces {
					th, an := p.Feed(s)
					for _, m := range markers {
						for n := 2; n <= len(m); n++ {
							// A piece may end in "<" (text), never in a
							// longer start of a marker, nor hold one whole,
							// unless the expected part itself does.
							if (hasSuffixOrContains(th, m[:n], n == len(m)) && !contains(tt.think, m[:n])) ||
								(hasSuffixOrContains(an, m[:n], n == len(m)) && !contains(tt.answer, m[:n])) {
								t.Errorf("%s: piece thinking %q answer %q shows part of %s", how, th, an, m)
							}
						}
					}
					think, answer = think+th, answer+an
				}
				th, an := p.Finish()
				think, answer = think+th, answer+an
				if think != tt.think || answer != tt.answer {
					t.Errorf("%s: thinking %q answer %q, want %q and %q", how, think, answer, tt.think, tt.answer)
				}
			}
			check("whole", []string{tt.reply})
			for i := 1; i < len(tt.reply); i++ {
				check("split", []string{tt.reply[:i], tt.reply[i:]})
			}
			var bytes []string
			for i := range len(tt.reply) {
				bytes = append(bytes, tt.reply[i:i+1])
			}
			check("bytewise", bytes)
		})
	}
}

func contains(s, sub string) bool { return sub != "" && strings.Contains(s, sub) }

// hasSuffixOrContains: s ends with the start of a marker, or (whole)
// contains the marker.
func hasSuffixOrContains(s, part string, whole bool) bool {
	if whole {
		return contains(s, part)
	}
	return strings.HasSuffix(s, part)
}

func TestThinkFormatOf(t *testing.T) {
	for tmpl, want := range map[string]ThinkFormat{
		"{{'<|im_start|>assistant\\n<think>\\n'}}":      ThinkTags,
		"<|start|>assistant<|channel|>final<|message|>": Harmony,
		"<|im_start|>{{ message.content }}":             NoThinking,
	} {
		if got := ThinkFormatOf(tmpl); got != want {
			t.Errorf("ThinkFormatOf(%q) = %v, want %v", tmpl, got, want)
		}
	}
}

// The reasoning families' generation prompts, as their GGUFs hold them
// (Jinja escapes: \n is a backslash and an n).
const (
	r1Template  = `{% set content = message['content'] %}{% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}{{'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'}}{% if add_generation_prompt and not ns.is_tool %}{{'<｜Assistant｜><think>\n'}}{% endif %}`
	qwqTemplate = `{%- set content = message.content.split('</think>')[-1].lstrip('\n') %}{{- '<|im_start|>' + message.role + '\n' + content + '<|im_end|>\n' }}{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n<think>\n' }}
{%- endif %}`
	qwen3Template = `{{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}`
	chatmlTemplate = `{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}`
)

// What a reply starts with after each family's generation prompt: R1 and
// QwQ open the block whatever is asked; Qwen 3 closes an empty one only
// when asked not to think; others write nothing.
func TestReplyOpening(t *testing.T) {
	for _, tt := range []struct {
		name, tmpl string
		mode       ThinkMode
		want       string
		canSkip    bool
	}{
		{"r1 default", r1Template, ThinkDefault, "<think>\n", false},
		{"r1 off (forced)", r1Template, ThinkOff, "<think>\n", false},
		{"qwq on", qwqTemplate, ThinkOn, "<think>\n", false},
		{"qwen3 default", qwen3Template, ThinkDefault, "", true},
		{"qwen3 on", qwen3Template, ThinkOn, "", true},
		{"qwen3 off", qwen3Template, ThinkOff, "<think>\n\n</think>\n\n", true},
		{"chatml off", chatmlTemplate, ThinkOff, "", false},
		{"harmony off", "<|start|>{{ x }}<|channel|>", ThinkOff, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ReplyOpening(tt.tmpl, tt.mode); got != tt.want {
				t.Errorf("ReplyOpening = %q, want %q", got, tt.want)
			}
			if got := CanSkipThinking(tt.tmpl); got != tt.canSkip {
				t.Errorf("CanSkipThinking = %v, want %v", got, tt.canSkip)
			}
		})
	}
}

// A reply after an opened block is thinking from its first token, at
// every split point; after an empty block it is all answer.
func TestThinkParserAfterOpening(t *testing.T) {
	for _, tt := range []struct {
		opening, reply, thinking, answer string
	}{
		{"<think>\n", "Add them.\n</think>\n\n4", "Add them.\n", "4"},
		{"<think>\n\n</think>\n\n", "4 <think>x</think>", "", "4 <think>x</think>"},
		{"", "<think>a</think>b", "a", "b"},
	} {
		for cut := 0; cut <= len(tt.reply); cut++ {
			p := NewThinkParserAfter(ThinkTags, tt.opening)
			th1, a1 := p.Feed(tt.reply[:cut])
			th2, a2 := p.Feed(tt.reply[cut:])
			th3, a3 := p.Finish()
			if th, a := th1+th2+th3, a1+a2+a3; th != tt.thinking || a != tt.answer {
				t.Errorf("after %q, cut at %d: thinking %q, answer %q; want %q, %q", tt.opening, cut, th, a, tt.thinking, tt.answer)
			}
		}
	}
}
