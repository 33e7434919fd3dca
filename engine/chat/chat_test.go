package chat

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestChatML(t *testing.T) {
	tests := []struct {
		name         string
		msgs         []Message
		addAssistant bool
		want         string
		wantErr      error
	}{
		{
			name:         "one user turn opens the assistant turn",
			msgs:         []Message{{"user", "Hi"}},
			addAssistant: true,
			want:         "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
		},
		{
			name: "system, user, assistant without a new turn",
			msgs: []Message{{"system", "Be brief."}, {"user", "2+2?"}, {"assistant", "4"}},
			want: "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n",
		},
		{
			name:         "content is copied verbatim, newlines and unicode included",
			msgs:         []Message{{"user", "a\n\nb ü 日本"}},
			addAssistant: true,
			want:         "<|im_start|>user\na\n\nb ü 日本<|im_end|>\n<|im_start|>assistant\n",
		},
		{name: "empty conversation", addAssistant: true, wantErr: ErrNoMessages},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ChatML{}.Format(tt.msgs, tt.addAssistant)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Format (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChatMLRejectsMissingRole(t *testing.T) {
	_, err := ChatML{}.Format([]Message{{"user", "a"}, {"", "b"}}, true)
	if err == nil {
		t.Fatal("a message without a role was accepted")
	}
}
