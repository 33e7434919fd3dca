package llama

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/engine/chat"
	"homering/engine/modelgen"
)

// TestFamilyTemplates: the chat template a generated model of each family
// carries (engine/modelgen, the family's released template) is recognised
// by llama.cpp as that family's format, and a conversation renders byte for
// byte as the family documents its turns. Qwen 3's earlier answers lose
// their thinking (chat.AnswerOnly, as the Qwen 3 template's
// content.split('</think>')[-1] does) before llama.cpp renders them.
func TestFamilyTemplates(t *testing.T) {
	v, err := modelgen.BuildVocab(modelgen.MinVocab)
	if err != nil {
		t.Fatal(err)
	}
	conv := []chat.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "What is 2+2?"},
		{Role: "assistant", Content: "<think>\nAdd them.\n</think>\n\n4"},
		{Role: "user", Content: "And 3+3?"},
	}
	noSystem := conv[1:]
	tests := []struct {
		arch string
		msgs []chat.Message
		want string
	}{
		// Gemma 2 has no system role; Gemma 3 opens the first user turn with it.
		{"gemma2", noSystem, "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n4<end_of_turn>\n<start_of_turn>user\nAnd 3+3?<end_of_turn>\n<start_of_turn>model\n"},
		{"gemma3", conv, "<start_of_turn>user\nBe brief.\n\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n4<end_of_turn>\n<start_of_turn>user\nAnd 3+3?<end_of_turn>\n<start_of_turn>model\n"},
		{"phi3", conv, "<|system|>\nBe brief.<|end|>\n<|user|>\nWhat is 2+2?<|end|>\n<|assistant|>\n4<|end|>\n<|user|>\nAnd 3+3?<|end|>\n<|assistant|>\n"},
		{"qwen3", conv, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n"},
		{"qwen3moe", noSystem, "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n"},
		// llama.cpp's harmony is the turns without the template's system
		// header, an assistant turn ending in <|return|>, and the reply
		// opened without a channel (the model writes it).
		{"gpt-oss", noSystem, "<|start|>user<|message|>What is 2+2?<|end|><|start|>assistant<|message|>4<|return|><|start|>user<|message|>And 3+3?<|end|><|start|>assistant"},
	}
	for _, tt := range tests {
		t.Run(tt.arch, func(t *testing.T) {
			src, _ := modelgen.Config{Arch: tt.arch, Type: "F32"}.KV(v)["tokenizer.chat_template"].(string)
			if src == "" {
				t.Fatalf("a generated %s has no chat template", tt.arch)
			}
			msgs := make([]chat.Message, len(tt.msgs))
			for i, m := range tt.msgs {
				if m.Role == "assistant" {
					m.Content = chat.AnswerOnly(m.Content)
				}
				msgs[i] = m
			}
			got, err := Template{Source: src}.Format(msgs, true)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("llama.cpp's rendering (-documented +llama.cpp):\n%s", diff)
			}
		})
	}
}
