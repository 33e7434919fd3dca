//go:build linux

package apptest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"homering/app/api/apitype"
)

// TestReadOnlyConfigDir: the config directory turned read-only (a
// read-only bind mount: chmod does not stop root) while the agent runs:
// saving a conversation or the settings fails with one sentence that
// names the folder, every saved conversation still reads, and chats
// answer; stopped and started on the read-only directory, the agent
// refuses in one sentence that names the folder and what to do (issue 21
// item 6).
func TestReadOnlyConfigDir(t *testing.T) {
	e := NewEnv(t)
	n := e.NewNode(t, "den")
	if err := os.WriteFile(filepath.Join(n.Home, "settings.json"), []byte(`{"model": "`+webUIModel+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	n.Start(t)
	info := n.Info(t)
	call := func(method, path, body string) string {
		out, err := n.inNS(context.Background(), "curl", "-sS", "-X", method, "-H", "Authorization: Bearer "+info.Token, "-d", body, info.URL+path).Output()
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return string(out)
	}
	saved, _ := json.Marshal(apitype.Conversation{Title: "A saved chat", Messages: []apitype.ConversationMessage{{Role: "user", Content: "Hello"}}})
	call("PUT", "/api/v1/conversations/saved", string(saved))

	// `ip netns exec` gave the running agent a mount namespace of its own;
	// -r takes its root too, which differs from ours in a chroot (the
	// fresh-machine check), where the agent's /tmp is not ours.
	readOnly(t, n.Home, "nsenter", "-t", strconv.Itoa(n.PID()), "-m", "-r", "--")
	if out := call("PUT", "/api/v1/conversations/new", string(saved)); !strings.Contains(out, filepath.Join(n.Home, "conversations")+" cannot be read or written (read-only file system)") {
		t.Errorf("saving a conversation on a read-only folder: %s", out)
	}
	var set map[string]any
	if err := json.Unmarshal([]byte(call("GET", "/api/v1/settings", "")), &set); err != nil {
		t.Fatal(err)
	}
	set["context_tokens"] = 512
	for _, file := range []string{"settings.json", "config.json"} {
		b, _ := json.Marshal(set)
		if out := call("POST", "/api/v1/settings", string(b)); !strings.Contains(out, filepath.Join(n.Home, file)+" (read-only file system).") {
			t.Errorf("saving the settings on a read-only folder: %s, want the sentence naming %s", out, file)
		}
		set["name"] = "renamed" // a new name is saved in config.json
	}
	if out := call("GET", "/api/v1/conversations/saved", ""); !strings.Contains(out, `"A saved chat"`) {
		t.Errorf("the saved conversation on a read-only folder: %s", out)
	}
	if out, err := n.CLI(context.Background(), "chat", "-n", "4", "Once upon a time"); err != nil {
		t.Errorf("a chat with a read-only config folder: %v\n%s", err, out)
	}

	n.Kill(t) // SIGKILL: api.json stays, as after a crash
	readOnly(t, n.Home)
	err := n.start()
	want := "homering: the config folder " + n.Home + " cannot be written (read-only file system); make it writable, or start Homering with HOMERING_HOME set to a folder that is"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("starting on a read-only config folder: %v, want %q", err, want)
	}
}

// readOnly bind-mounts dir read-only over itself until the test ends (a
// chmod does not stop root), in the mount namespace the command prefix in
// (nsenter …) runs in, or this one.
func readOnly(t *testing.T, dir string, in ...string) {
	t.Helper()
	run := func(args ...string) ([]byte, error) {
		args = append(slices.Clone(in), args...)
		return exec.Command(args[0], args[1:]...).CombinedOutput()
	}
	if out, err := run("mount", "--bind", dir, dir); err != nil {
		t.Fatalf("mount --bind: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := run("umount", dir); err != nil && len(in) == 0 {
			t.Errorf("umount %s: %v\n%s", dir, err, out) // a namespace entered ends with its agent
		}
	})
	if out, err := run("mount", "-o", "remount,bind,ro", dir); err != nil {
		t.Fatalf("mount -o remount,ro: %v\n%s", err, out)
	}
}
