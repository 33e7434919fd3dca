//go:build linux

package apptest

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// fromNS is an HTTP request made with curl in another device's network
// namespace: the status code ("000" when nothing answers) and the body.
func fromNS(t *testing.T, ns *Node, method, url string, headers ...string) (code, body string) {
	t.Helper()
	args := []string{"-s", "-X", method, "--max-time", "5", "-w", "\n%{http_code}", url}
	for _, h := range headers {
		args = append(args, "-H", h)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := ns.inNS(ctx, "curl", args...).Output()
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 7) { // 7: could not connect
		t.Fatalf("curl %s from %s: %v\n%s", url, ns.Name, err, out)
	}
	s := string(out)
	i := strings.LastIndexByte(s, '\n')
	return s[i+1:], s[:max(i, 0)]
}

// onlyLoopback fails t when the agent listens on TCP beyond loopback, but
// for the chat API's port when shared (and mDNS, as TestDiscoveryAndPairing
// explains).
func onlyLoopback(t *testing.T, n *Node, shared bool) {
	t.Helper()
	socks, err := Sockets(n.PID())
	if err != nil {
		t.Fatal(err)
	}
	sawShared := false
	for _, s := range socks {
		a := s.Local.Addr()
		switch {
		case !s.Listen:
		case strings.HasPrefix(s.Proto, "tcp") && a.IsLoopback():
		case strings.HasPrefix(s.Proto, "udp") && s.Local.Port() == 5353:
		case shared && strings.HasPrefix(s.Proto, "tcp") && a.IsUnspecified() && s.Local.Port() == 47471:
			sawShared = true
		default:
			t.Errorf("listening beyond loopback (chat API shared: %v): %v (all: %v)", shared, s, socks)
		}
	}
	if shared != sawShared {
		t.Errorf("chat API shared=%v but a wildcard listener on 47471 is %v: %v", shared, sawShared, socks)
	}
}

// TestChatAPIShared is issue 18 item 2 from another computer (another
// network namespace on the same bridge): with "Share the chat API" off
// nothing but loopback listens; turned on (no restart), the compatible APIs
// answer on the LAN with the API key, 401 in each API's shape without it,
// and the control API stays out of reach; turned off, the port is gone
// from the LAN again; and a start with it on shares from the start.
func TestChatAPIShared(t *testing.T) {
	e := NewEnv(t)
	head := e.NewNode(t, "head")
	lan := e.NewNode(t, "lan") // only a namespace: the other computer's curl runs there
	head.Start(t)
	info := head.Info(t)
	cu, err := url.Parse(info.URL)
	if err != nil {
		t.Fatal(err)
	}
	chatAPI := "http://" + head.Addr + ":47471"
	control := "http://" + head.Addr + ":" + cu.Port()
	const key = "hr-0123456789abcdef0123"

	unreachable := func(t *testing.T) {
		t.Helper()
		if code, body := fromNS(t, lan, "GET", chatAPI+"/v1/models", "Authorization: Bearer "+key); code != "000" {
			t.Errorf("the chat API answers the LAN while not shared: HTTP %s %s", code, body)
		}
	}
	reachable := func(t *testing.T) {
		t.Helper()
		code, body := fromNS(t, lan, "GET", chatAPI+"/v1/models", "Authorization: Bearer "+key)
		var list struct{ Object string }
		if code != "200" || json.Unmarshal([]byte(body), &list) != nil || list.Object != "list" {
			t.Errorf("GET /v1/models from the LAN with the key: HTTP %s %s, want 200 and a list", code, body)
		}
		code, body = fromNS(t, lan, "GET", chatAPI+"/v1/models")
		var oe struct {
			Error struct{ Code, Message string }
		}
		if code != "401" || json.Unmarshal([]byte(body), &oe) != nil || oe.Error.Code != "invalid_api_key" {
			t.Errorf("GET /v1/models from the LAN without a key: HTTP %s %s, want OpenAI's 401 invalid_api_key", code, body)
		}
		code, body = fromNS(t, lan, "POST", chatAPI+"/v1/messages", "x-api-key: wrong-key-0123456789")
		var ae struct {
			Type  string
			Error struct{ Type string }
		}
		if code != "401" || json.Unmarshal([]byte(body), &ae) != nil || ae.Error.Type != "authentication_error" {
			t.Errorf("POST /v1/messages from the LAN with a wrong key: HTTP %s %s, want Anthropic's 401 authentication_error", code, body)
		}
		code, body = fromNS(t, lan, "GET", chatAPI+"/api/tags")
		var ol map[string]string
		if code != "401" || json.Unmarshal([]byte(body), &ol) != nil || ol["error"] == "" {
			t.Errorf("GET /api/tags from the LAN without a key: HTTP %s %s, want Ollama's 401 {\"error\"}", code, body)
		}
		// The control API is not on the LAN: neither its own port nor
		// through the shared one, not even with its token.
		if code, body := fromNS(t, lan, "GET", control+"/api/v1/status", "Authorization: Bearer "+info.Token); code != "000" {
			t.Errorf("the control API's port answers the LAN: HTTP %s %s", code, body)
		}
		if code, _ := fromNS(t, lan, "GET", chatAPI+"/api/v1/status", "Authorization: Bearer "+info.Token); code != "404" {
			t.Errorf("the control API through the shared port: HTTP %s, want 404", code)
		}
		// This computer still needs no key.
		if code, _ := fromNS(t, head, "GET", "http://127.0.0.1:47471/v1/models"); code != "200" {
			t.Errorf("GET /v1/models on this computer without a key while shared: HTTP %s, want 200", code)
		}
	}

	t.Run("off: nothing but loopback listens", func(t *testing.T) {
		onlyLoopback(t, head, false)
		unreachable(t)
	})
	t.Run("on: the LAN reaches the compatible APIs with the key, at once", func(t *testing.T) {
		out := head.MustCLI(t, "settings", "expose=true", "api_key="+key)
		if !strings.Contains(out, "applies at once") {
			t.Errorf("homering settings does not say sharing applies at once:\n%s", out)
		}
		onlyLoopback(t, head, true)
		reachable(t)
	})
	t.Run("off again: the port is gone from the LAN, at once", func(t *testing.T) {
		head.MustCLI(t, "settings", "expose=false")
		onlyLoopback(t, head, false)
		unreachable(t)
	})
	t.Run("a start with sharing on shares from the start", func(t *testing.T) {
		head.MustCLI(t, "settings", "expose=true")
		head.Stop(t)
		head.Start(t)
		info = head.Info(t)
		if cu, err = url.Parse(info.URL); err != nil {
			t.Fatal(err)
		}
		control = "http://" + head.Addr + ":" + cu.Port()
		onlyLoopback(t, head, true)
		reachable(t)
		if t.Failed() {
			t.Logf("agent log:\n%s", head.Log())
		}
	})
}
