package app

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"homering/app/api/apitype"
	"homering/app/config"
)

// TestChatAPIPort: the compatible APIs' port is the settings' (47471 on a
// fresh install, so it survives restarts), --api-port wins over it, and a
// port that is taken is one sentence naming it and where to change it.
func TestChatAPIPort(t *testing.T) {
	dir := t.TempDir()
	if got := chatAPIPort(dir, 0); got != (chatPort{port: config.DefaultAPIPort}) || got.port != 47471 {
		t.Errorf("fresh install: %+v, want 47471 from the settings", got)
	}
	s := config.DefaultSettings()
	s.APIPort = 8765
	if err := config.SaveSettings(dir, s); err != nil {
		t.Fatal(err)
	}
	if got := chatAPIPort(dir, 0); got != (chatPort{port: 8765}) {
		t.Errorf("settings' port: %+v, want 8765", got)
	}
	if got := chatAPIPort(dir, 9000); got != (chatPort{port: 9000, fromFlag: true}) {
		t.Errorf("--api-port: %+v, want 9000 from the flag", got)
	}
	_ = os.WriteFile(filepath.Join(dir, config.SettingsFile), []byte("{"), 0o600)
	if got := chatAPIPort(dir, 0); got.port != config.DefaultAPIPort {
		t.Errorf("unreadable settings: %+v, want the default port", got)
	}

	// A free port is listened on, on loopback.
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := free.Addr().(*net.TCPAddr).Port
	_ = free.Close()
	ln, pr := listenChatAPI(chatPort{port: port})
	if pr != nil {
		t.Fatalf("free port %d: %+v", port, pr)
	}
	if got, want := ln.Addr().String(), "127.0.0.1:"+strconv.Itoa(port); got != want {
		t.Errorf("listening on %s, want %s", got, want)
	}

	// Taken (by the listener above): one sentence, the port, where to change it.
	for _, tc := range []struct {
		p     chatPort
		where []string
	}{
		{chatPort{port: port}, []string{"Settings (API port)", "--api-port"}},
		{chatPort{port: port, fromFlag: true}, []string{"--api-port", "HOMERING_API_PORT"}},
	} {
		ln2, pr := listenChatAPI(tc.p)
		if ln2 != nil || pr == nil {
			t.Fatalf("taken port %d: listener %v, problem %v", port, ln2, pr)
		}
		want := "Port " + strconv.Itoa(port) + " of the OpenAI, Anthropic and Ollama compatible APIs is taken by another program; "
		if !strings.HasPrefix(pr.Text, want) || strings.Count(pr.Text, ".") != 1 || !strings.HasSuffix(pr.Text, ".") {
			t.Errorf("problem text %q: want one sentence starting %q", pr.Text, want)
		}
		for _, w := range tc.where {
			if !strings.Contains(pr.Text, w) {
				t.Errorf("problem text %q does not say %q", pr.Text, w)
			}
		}
		if pr.Code != "chat_api_port" || pr.Fix == "" {
			t.Errorf("problem %+v: want code chat_api_port with a fix", pr)
		}
	}
	_ = ln.Close()
}

// TestAgentFlagsAPIPort: --api-port and HOMERING_API_PORT, and their bad values.
func TestAgentFlagsAPIPort(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		args      []string
		want      int
		exit      int
	}{
		{"none", "", nil, 0, 0},
		{"flag", "", []string{"--api-port", "8000"}, 8000, 0},
		{"env", "8001", nil, 8001, 0},
		{"flag over env", "8001", []string{"--api-port", "8002"}, 8002, 0},
		{"bad flag", "", []string{"--api-port", "70000"}, 0, 2},
		{"bad env", "port", nil, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HOMERING_API_PORT", tc.env)
			var out, errb strings.Builder
			f, exit, ok := parseAgentFlags("headless", env{args: tc.args, stdout: &out, stderr: &errb})
			if exit != tc.exit || ok != (tc.exit == 0) || f.apiPort != tc.want {
				t.Errorf("port %d, exit %d, ok %v (%s); want port %d, exit %d", f.apiPort, exit, ok, errb.String(), tc.want, tc.exit)
			}
		})
	}
}

// statusWith runs homering status against a fake agent whose status is st.
func statusWith(t *testing.T, st apitype.Status) string {
	t.Helper()
	fakeAgent(t, map[string]func() any{
		"GET /api/v1/status": func() any { return st },
		"GET /api/v1/ring":   func() any { return apitype.RingStatus{} },
		"GET /api/v1/plan":   func() any { return apitype.Plan{} },
	})
	code, out, errs := runCmd(t, "status")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errs)
	}
	return out
}

// TestStatusPrintsChatAPI: homering status prints the compatible APIs'
// base URL, and the OpenAI one with /v1.
func TestStatusPrintsChatAPI(t *testing.T) {
	out := statusWith(t, apitype.Status{Device: apitype.Device{Short: "SELF123", Name: "desk"}, ChatAPI: "http://127.0.0.1:47471"})
	if want := "chat API http://127.0.0.1:47471 (OpenAI clients: base URL http://127.0.0.1:47471/v1;"; !strings.Contains(out, want) {
		t.Errorf("status:\n%s\nwant a line with %q", out, want)
	}
	if strings.Contains(out, "shared with this network") {
		t.Errorf("status says the chat API is shared while it is not:\n%s", out)
	}
}

// TestStatusPrintsSharedChatAPI: while the chat API is shared, homering
// status names the addresses other computers use (used interfaces only,
// no link-local ones) and that they need the key.
func TestStatusPrintsSharedChatAPI(t *testing.T) {
	out := statusWith(t, apitype.Status{Device: apitype.Device{Short: "SELF123", Name: "desk"}, ChatAPI: "http://127.0.0.1:47480", ChatAPIShared: true,
		Interfaces: []apitype.Interface{
			{Name: "eth0", Used: true, Addrs: []string{"192.168.1.5/24", "fe80::1/64", "fd00::5/64"}},
			{Name: "docker0", Used: false, Addrs: []string{"172.17.0.1/16"}},
		}})
	if want := "chat API shared with this network: http://192.168.1.5:47480, http://[fd00::5]:47480 (other computers send the API key)"; !strings.Contains(out, want) {
		t.Errorf("status:\n%s\nwant a line with %q", out, want)
	}
}

// The control API listens where it did last time, with the same token, so
// an open page reconnects after a restart; a taken port or a damaged file
// gets a free port and a new token.
func TestListenControlKeepsTheAddress(t *testing.T) {
	dir := t.TempDir()
	closeLn := func(ln net.Listener) {
		t.Helper()
		if err := ln.Close(); err != nil {
			t.Fatal(err)
		}
	}
	keep := func(ln net.Listener, token string) {
		t.Helper()
		b := []byte(`{"url":"http://` + ln.Addr().String() + `","token":"` + token + `","pid":1}`)
		if err := config.WriteFile(filepath.Join(dir, lastControlFile), b); err != nil {
			t.Fatal(err)
		}
	}
	ln, token, err := listenControl(dir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	first := ln.Addr().String()
	keep(ln, token)
	closeLn(ln)

	ln, again, err := listenControl(dir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if ln.Addr().String() != first || again != token {
		t.Errorf("restart: %s token %s…, want the last start's %s token %s…", ln.Addr(), again[:8], first, token[:8])
	}
	// The port is taken now (ln still listens): another port, another token.
	other, fresh, err := listenControl(dir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if other.Addr().String() == first || fresh == token || len(fresh) != 64 {
		t.Errorf("with the last port taken: %s token %s…, want another port and token", other.Addr(), fresh[:8])
	}
	closeLn(other)
	closeLn(ln)

	// A fixed port in the config wins over the last start's.
	fixed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	want := fixed.Addr().String()
	closeLn(fixed)
	ln, _, err = listenControl(dir, want)
	if err != nil {
		t.Fatal(err)
	}
	if ln.Addr().String() != want {
		t.Errorf("api_addr %s: listened on %s", want, ln.Addr())
	}
	closeLn(ln)

	// A damaged file is not trusted.
	if err := os.WriteFile(filepath.Join(dir, lastControlFile), []byte(`{"url":"http://10.0.0.1:80","token":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, tok, err := listenControl(dir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) != 64 || !strings.HasPrefix(ln.Addr().String(), "127.0.0.1:") {
		t.Errorf("damaged file: %s token %q", ln.Addr(), tok)
	}
	closeLn(ln)
}
