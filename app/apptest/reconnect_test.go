//go:build linux

package apptest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWebUIReconnect: a page of the web UI stays open while its agent is
// stopped (SIGTERM) and started again; the agent listens where it did, with
// the same token (api-last.json), and the page reconnects by itself
// (frontend/tests/reconnect.mjs checks the banner come and go, with no
// reload). Issue 18 item 1.
func TestWebUIReconnect(t *testing.T) {
	needFrontend(t)
	e := NewEnv(t)
	n := e.NewNode(t, "den")
	n.Start(t)
	before := n.Info(t)
	ready := filepath.Join(t.TempDir(), "ready")
	restarted := make(chan error, 1)
	go func() { restarted <- restartWhen(n, ready) }()
	runUIScript(t, n, "reconnect.mjs", 6, []string{"reconnected.png"}, "READY_FILE="+ready)
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	if after := n.Info(t); after.URL != before.URL || after.Token != before.Token {
		t.Errorf("after the restart the UI is at %s (token %.8s…), before at %s (%.8s…)", after.URL, after.Token, before.URL, before.Token)
	}
}

// restartWhen stops n (SIGTERM) once the file ready exists, waits two
// seconds with it down (the page notices), and starts it again.
func restartWhen(n *Node, ready string) error {
	deadline := time.Now().Add(90 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the page never got ready (%s)", ready)
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.signal(syscall.SIGTERM)
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		return fmt.Errorf("agent %s did not stop after SIGTERM", n.Name)
	}
	time.Sleep(2 * time.Second)
	return n.start()
}

// TestHeadlessPrintsTheUILink: `homering headless` prints, as Jupyter does, a
// link that opens the UI already authorised: following it in the node's
// namespace ends on the app with a cookie that opens the control API
// (issue 18 item 3).
func TestHeadlessPrintsTheUILink(t *testing.T) {
	needFrontend(t)
	e := NewEnv(t)
	n := e.NewNode(t, "den")
	n.Start(t)
	m := regexp.MustCompile(`are at (http://127\.0\.0\.1:\d+)/\?token=[0-9a-f]{64} `).FindStringSubmatch(n.Log())
	if m == nil {
		t.Fatalf("headless printed no link with a token:\n%s", n.Log())
	}
	link := m[0][len("are at ") : len(m[0])-1]
	jar := filepath.Join(t.TempDir(), "cookies")
	curl := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("ip", append([]string{"netns", "exec", n.NS, "curl", "-sS", "-b", jar, "-c", jar, "-o", "/dev/null", "-w", "%{http_code} %{url_effective}"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("curl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if got, want := curl("-L", link), "200 "+m[1]+"/"; got != want {
		t.Errorf("following the printed link: %q, want %q (the token traded for a cookie, off the address bar)", got, want)
	}
	if got := curl(m[1] + "/api/v1/status"); !strings.HasPrefix(got, "200 ") {
		t.Errorf("the control API with the link's cookie: %q, want 200", got)
	}
}
