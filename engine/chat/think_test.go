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
