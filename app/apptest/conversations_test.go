//go:build linux

package apptest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"homering/app/api/apitype"
)

// TestWebUIConversations: conversations never get stuck (issue 18 item 4).
// A real `homering headless` chats with stories260K in a context of 256
// tokens, and frontend/tests/conversations.mjs drives chromium through what
// a person sees: a reply cut by max tokens is marked as cut; temperature,
// top-p, max tokens and the answering model are saved with the
// conversation (the page reloaded shows them); a message edited is sent
// again with the replies after it replaced; a reply deleted can be asked
// for again; a long conversation is answered with its oldest messages left
// out and marked; a message longer than the context gets the clear error,
// goes back to the composer, and the next message is answered; a reply with
// no max tokens runs to its end. This test then reads the conversations
// the agent saved.
func TestWebUIConversations(t *testing.T) {
	needFrontend(t)
	e := NewEnv(t)
	n := e.NewNode(t, "den")
	settings, _ := json.Marshal(map[string]any{"model": webUIModel, "context_tokens": 256})
	if err := os.WriteFile(filepath.Join(n.Home, "settings.json"), settings, 0o600); err != nil {
		t.Fatal(err)
	}
	n.Start(t)
	runUIScript(t, n, "conversations.mjs", 20, []string{"cut.png", "left-out.png", "too-long.png"})

	files, _ := filepath.Glob(filepath.Join(n.Home, "conversations", "*.json"))
	saved := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c apitype.Conversation
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c.Params != nil && c.Model == "stories260K" {
			saved++
		}
	}
	if saved < 2 {
		t.Errorf("%d of %d saved conversations record their parameters and the model stories260K, want at least 2", saved, len(files))
	}
}
