//go:build linux

package apptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestRingFitsContext: a conversation longer than the context, sent to
// /api/v1/chat with fit_context, is answered on a ring of two devices with
// its oldest turns left out, as on one device; the same conversation
// without fit_context gets the context_full error.
func TestRingFitsContext(t *testing.T) {
	e := NewEnv(t)
	a, b := e.NewNode(t, "a"), e.NewNode(t, "b")
	for _, n := range []*Node{a, b} {
		n.MustCLI(t, "contribute", "on")
		if err := os.WriteFile(filepath.Join(n.Home, "settings.json"), []byte(`{"context_tokens": 256}`), 0o600); err != nil {
			t.Fatal(err)
		}
		n.Start(t)
	}
	pairWorkers(t, a, b)
	var msgs []apitype.ChatMessage
	for i := range 10 {
		msgs = append(msgs, apitype.ChatMessage{Role: "user", Content: fmt.Sprintf("Once upon a time there was a little cat called Kit number %d.", i)},
			apitype.ChatMessage{Role: "assistant", Content: "She played in the park with her friend the dog all day long."})
	}
	msgs = append(msgs, apitype.ChatMessage{Role: "user", Content: "What happened next?"})
	info := a.Info(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	chat := func(fit bool) string {
		body, _ := json.Marshal(apitype.ChatRequest{Messages: msgs, System: "Tell a story.", MaxTokens: 8, ModelPath: webUIModel,
			Devices: "all", Rounds: 1, FitContext: fit})
		out, err := a.inNS(ctx, "curl", "-sSN", info.URL+"/api/v1/chat", "-H", "Authorization: Bearer "+info.Token, "-d", string(body)).Output()
		if err != nil {
			t.Fatalf("curl: %v\n%s", err, out)
		}
		return string(out)
	}
	out := chat(true)
	_, data, ok := strings.Cut(out, "event: done\ndata: ")
	var done apitype.ChatDone
	if !ok || json.Unmarshal([]byte(strings.TrimSpace(data)), &done) != nil {
		t.Fatalf("no done event:\n%s\nagent log:\n%s", out, a.Log())
	}
	st := done.Stats
	devices := 0
	if st.Ring != nil {
		devices = len(st.Ring.Devices)
	}
	t.Logf("on a ring of %d devices: %d of %d messages left out, prompt %d tokens, reply %d tokens", devices, st.LeftOut, len(msgs), st.PromptTokens, st.CompletionTokens)
	if devices != 2 || st.LeftOut == 0 || st.LeftOut%2 != 0 || st.PromptTokens >= 256 || st.CompletionTokens == 0 {
		t.Errorf("want 2 devices (alone: %q), whole turns left out, a prompt under 256 tokens and a reply", st.Alone)
	}
	if out := chat(false); !strings.Contains(out, "event: error") || !strings.Contains(out, `"code":"context_full"`) {
		t.Errorf("without fit_context:\n%s", out)
	}
}
