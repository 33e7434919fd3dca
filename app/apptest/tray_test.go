//go:build linux

package apptest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"homering/app/api/apitype"
	"homering/internal/testlog"
)

// TestAppWithoutSessionBus starts `homering` with no command (the agent with
// a tray) where no tray can exist: without a D-Bus session, and with a bus
// address that leads nowhere. It keeps running headless, says so, serves its
// API and stops cleanly, with no panic. A second launch for the same user
// opens the running agent's window (this build has none: it names the
// address) and exits 0; its stderr is /dev/null, so it logs to agent.log in
// the config directory.
func TestAppWithoutSessionBus(t *testing.T) {
	e := NewEnv(t)
	for _, tc := range []struct {
		name string
		bus  string
	}{
		{"no bus", ""},
		{"dead bus", "unix:path=/nonexistent/homering-test-bus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := e.NewNode(t, strings.ReplaceAll(tc.name, " ", ""))
			envv := []string{"HOMERING_HOME=" + n.Home}
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "DBUS_SESSION_BUS_ADDRESS=") {
					envv = append(envv, kv)
				}
			}
			if tc.bus != "" {
				envv = append(envv, "DBUS_SESSION_BUS_ADDRESS="+tc.bus)
			}
			var log testlog.Buffer
			cmd := n.inNS(context.Background(), n.env.Bin)
			cmd.Env, cmd.Stdout, cmd.Stderr = envv, &log, &log
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer func() { _ = cmd.Process.Kill() }() // an error when it has ended already
			WaitFor(t, time.Minute, "the agent's API", func() error {
				select {
				case err := <-exited:
					t.Fatalf("homering exited: %v\n%s", err, log.String())
				default:
				}
				if _, err := os.Stat(filepath.Join(n.Home, apitype.InfoFile)); err != nil {
					return err
				}
				_, err := n.CLI(context.Background(), "peers", "-json")
				return err
			})
			if !strings.Contains(log.String(), "no tray icon") || !strings.Contains(log.String(), "headless") {
				t.Errorf("the agent did not say it runs without a tray:\n%s", log.String())
			}
			// A second launch opens the running agent's window and exits 0;
			// with stderr on /dev/null it logs to agent.log.
			null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer null.Close()
			second := n.inNS(context.Background(), n.env.Bin)
			second.Env, second.Stderr = envv, null // not nil: Output would capture it
			started := time.Now()
			out, err := second.Output()
			agentLog, _ := os.ReadFile(filepath.Join(n.Home, "agent.log"))
			url := n.Info(t).URL
			if err != nil || !strings.Contains(string(agentLog), "opening its window") ||
				!strings.Contains(string(agentLog), "already runs") || !strings.Contains(string(agentLog), url) {
				t.Errorf("second launch: %v after %v, want exit 0 naming %s; stdout %q, agent.log:\n%s", err, time.Since(started), url, out, agentLog)
			}
			_ = cmd.Process.Signal(syscall.SIGTERM) // an error only when it has ended: the select says how
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("exit after SIGTERM: %v\n%s", err, log.String())
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no exit 20 s after SIGTERM:\n%s", log.String())
			}
			if s := log.String(); strings.Contains(s, "panic") || strings.Contains(s, "goroutine ") {
				t.Errorf("panic in the log:\n%s", s)
			}
			fmt.Fprint(testWriter{t}, log.String())
		})
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
