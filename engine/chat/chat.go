package chat

import (
	"errors"
	"fmt"
	"strings"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string // "system", "user" or "assistant" (templates may accept others)
	Content string
}

// Formatter renders a conversation to prompt text.
type Formatter interface {
	// Format returns the prompt for msgs; with addAssistant it ends with the
	// opening of an assistant turn.
	Format(msgs []Message, addAssistant bool) (string, error)
	// Name says which template this is ("chatml", or the GGUF's).
	Name() string
}

// ErrNoMessages is returned when a conversation to format is empty.
var ErrNoMessages = errors.New("chat: the conversation has no messages; send at least one")

// ChatML is the <|im_start|>role\ncontent<|im_end|>\n format (OpenAI ChatML as
// Qwen and many fine-tunes use it), exactly as llama.cpp writes it.
type ChatML struct{}

// Name implements Formatter.
func (ChatML) Name() string { return "chatml" }

// Format implements Formatter.
func (ChatML) Format(msgs []Message, addAssistant bool) (string, error) {
	if len(msgs) == 0 {
		return "", ErrNoMessages
	}
	var b strings.Builder
	for i, m := range msgs {
		if m.Role == "" {
			return "", fmt.Errorf("chat: message %d has no role; set it to system, user or assistant", i)
		}
		b.WriteString("<|im_start|>")
		b.WriteString(m.Role)
		b.WriteString("\n")
		b.WriteString(m.Content)
		b.WriteString("<|im_end|>\n")
	}
	if addAssistant {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String(), nil
}

// AnswerOnly is an earlier assistant turn as the reasoning families'
// templates (Qwen 3, QwQ, DeepSeek-R1) render it: the text after its last
// </think>, leading newlines dropped, so that a client sending back a
// reply with its thinking inline prompts as one that sent the answer.
func AnswerOnly(content string) string {
	if i := strings.LastIndex(content, "</think>"); i >= 0 {
		return strings.TrimLeft(content[i+len("</think>"):], "\n")
	}
	return content
}
