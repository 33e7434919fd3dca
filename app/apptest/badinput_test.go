//go:build linux

package apptest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"homering/app/api/apitype"
)

// TestDamagedConfigFiles: config.json, settings.json and paired.json
// damaged (not JSON, or values no Homering writes) and one conversation
// file damaged do not keep the agent from starting (issue 21 item 6). It
// starts on the defaults and says, once on stderr and in its status (and
// `homering status`), one sentence per file that names it and where the
// file was kept; each damaged file is kept byte for byte as NAME.damaged;
// every readable conversation is listed and the damaged one is listed
// too, its opening saying what is wrong; a chat answers.
func TestDamagedConfigFiles(t *testing.T) {
	e := NewEnv(t)
	n := e.NewNode(t, "den")
	damaged := map[string]string{
		"config.json":   `{"link_port": 99999999}`, // JSON, a value out of range
		"settings.json": `{"model": "/m.gguf", "context_tokens": `,
		"paired.json":   "\x00\x01garbage",
	}
	for name, body := range damaged {
		if err := os.WriteFile(filepath.Join(n.Home, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	convs := filepath.Join(n.Home, "conversations")
	if err := os.MkdirAll(convs, 0o700); err != nil {
		t.Fatal(err)
	}
	good, _ := json.Marshal(apitype.Conversation{ID: "kept", Title: "A saved chat", Messages: []apitype.ConversationMessage{{Role: "user", Content: "Hello"}}})
	for name, body := range map[string]string{"kept.json": string(good), "torn.json": `{"id": "torn", "messages": [{"ro`} {
		if err := os.WriteFile(filepath.Join(convs, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	n.Start(t)

	info := n.Info(t)
	get := func(path string) (string, error) {
		out, err := n.inNS(context.Background(), "curl", "-sS", "-H", "Authorization: Bearer "+info.Token, info.URL+path).Output()
		return string(out), err
	}
	var st apitype.Status
	if out, err := get("/api/v1/status"); err != nil || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status: %s (%v)", out, err)
	}
	status := n.MustCLI(t, "status")
	for name, body := range damaged {
		var p *apitype.Problem
		for i := range st.Problems {
			if st.Problems[i].Code == "damaged_file:"+name {
				p = &st.Problems[i]
			}
		}
		if p == nil {
			t.Errorf("%s: no damaged_file problem in the status: %+v", name, st.Problems)
			continue
		}
		if !strings.Contains(p.Text, name+" in "+n.Home) || !strings.Contains(p.Text, "kept the file as "+name+".damaged") || strings.Count(p.Text, ". ") > 0 {
			t.Errorf("%s: problem text %q, want one sentence naming the file and where it was kept", name, p.Text)
		}
		if !strings.Contains(n.Log(), "homering: "+p.Text) || !strings.Contains(status, p.Text) {
			t.Errorf("%s: the sentence is not on stderr or in homering status:\n%s", name, status)
		}
		if b, err := os.ReadFile(filepath.Join(n.Home, name+".damaged")); err != nil || string(b) != body {
			t.Errorf("%s: kept as %q (%v), want the damaged bytes", name, b, err)
		}
		t.Logf("%s: %s", name, p.Text)
	}

	list, err := get("/api/v1/conversations")
	if err != nil || !strings.Contains(list, `"A saved chat"`) || !strings.Contains(list, `"Damaged: torn.json"`) {
		t.Errorf("conversations: %s (%v), want the saved one and the damaged one listed", list, err)
	}
	torn, err := get("/api/v1/conversations/torn")
	if err != nil || !strings.Contains(torn, filepath.Join(convs, "torn.json")+" is damaged") {
		t.Errorf("opening the damaged conversation: %s (%v), want the sentence naming its file", torn, err)
	}

	out, err := n.CLI(context.Background(), "chat", "-m", webUIModel, "-n", "4", "Once upon a time")
	if err != nil {
		t.Errorf("a chat after starting on the defaults: %v\n%s", err, out)
	}
}
