package app

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"homering/app/api/apitype"
	"homering/app/api/openai"
	"homering/app/config"
	"homering/discovery/identity"
)

// TestEveryCommandHelp: for every command, -h, --help and `homering help
// CMD` print its usage on stdout and exit 0, without doing anything else
// (no agent runs here: a command that went on would fail or start one).
func TestEveryCommandHelp(t *testing.T) {
	t.Setenv(config.EnvHome, t.TempDir())
	for name := range commands() {
		for _, args := range [][]string{{name, "-h"}, {name, "--help"}, {"help", name}, {name, "x", "-help"}} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				code, out, errs := runCmd(t, args...)
				if code != 0 || errs != "" {
					t.Errorf("exit %d, stderr %q; want 0 and nothing", code, errs)
				}
				if !strings.HasPrefix(out, "Usage: homering ") || !strings.Contains(out, name) {
					t.Errorf("stdout %q: want the usage of %s", out, name)
				}
			})
		}
	}
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		if code, out, _ := runCmd(t, args...); code != 0 || !strings.Contains(out, "homering help COMMAND") {
			t.Errorf("%v: exit %d, stdout %q; want 0 and the command list", args, code, out)
		}
	}
	if code, _, errs := runCmd(t, "help", "nope"); code != 2 || !strings.Contains(errs, `unknown command "nope"`) {
		t.Errorf("help nope: exit %d, stderr %q; want 2 and unknown command", code, errs)
	}
	// After "--" a -h is an argument (a prompt word), not a request for help.
	if helpRequested([]string{"-m", "x", "--", "-h"}) || !helpRequested([]string{"-m", "x", "--help"}) {
		t.Error("helpRequested: -h after -- must not count, --help before it must")
	}
}

// TestFlagDefaultsPrintShort: a float32 default prints as people wrote it.
func TestFlagDefaultsPrintShort(t *testing.T) {
	_, out, _ := runCmd(t, "run", "-h")
	for _, want := range []string{"(default 0.8)", "(default 0.95)", "(default 0.05)"} {
		if !strings.Contains(out, want) {
			t.Errorf("run -h lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "00000") {
		t.Errorf("run -h prints a float32 default in float64 digits:\n%s", out)
	}
}

// TestTemperatureRuleAsTheAPI: run and chat refuse a temperature the
// OpenAI API refuses, with its sentence.
func TestTemperatureRuleAsTheAPI(t *testing.T) {
	t.Setenv(config.EnvHome, t.TempDir())
	nine := 9.0
	_, apiErr := openai.FromChat(openai.ChatCompletionRequest{Temperature: &nine, Messages: []openai.Message{{Role: "user", Content: json.RawMessage(`"x"`)}}})
	if !errors.Is(apiErr, openai.ErrRequest) {
		t.Fatalf("the API took temperature 9: %v", apiErr)
	}
	want := openai.RefusedBecause(apiErr) // temperature 9 is outside 0-2
	for _, args := range [][]string{
		{"run", "-m", storiesModel, "--temp", "9", "hello"},
		{"chat", "--temp", "9", "hello"},
		{"chat", "--temp", "-0.5", "hello"},
	} {
		code, _, errs := runCmd(t, args...)
		if code != 2 || !strings.Contains(errs, strings.ReplaceAll(want, "9", args[len(args)-2])) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", args, code, errs, want)
		}
	}
	if code, _, errs := runCmd(t, "run", "-m", storiesModel, "-n", "1", "--temp", "2", "--threads", "1", "hello"); code != 0 {
		t.Errorf("run --temp 2 (the API's maximum): exit %d: %s", code, errs)
	}
}

// fakeAgent serves canned answers of the control API (routes: "METHOD
// /path" to a function returning the JSON value) and writes its api.json in
// a fresh HOMERING_HOME, so that CLI commands find it as a running agent.
// The real agent behind the same client is exercised in app/apptest.
func fakeAgent(t *testing.T, routes map[string]func() any) {
	t.Helper()
	mux := http.NewServeMux()
	for route, answer := range routes {
		mux.HandleFunc(route, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(answer())
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	home := t.TempDir()
	t.Setenv(config.EnvHome, home)
	b, _ := json.Marshal(apitype.Info{URL: srv.URL, Token: "t", PID: 1})
	if err := config.WriteFile(filepath.Join(home, apitype.InfoFile), b); err != nil {
		t.Fatal(err)
	}
}

// TestPairSaysItWaitsAndAlreadyPaired: the device showing a code says it
// waits and until when; pairing a device paired before says so, on both
// sides.
func TestPairSaysItWaitsAndAlreadyPaired(t *testing.T) {
	id := identity.IDFromCert([]byte("desk's certificate"))
	for _, paired := range []bool{false, true} {
		var polls atomic.Int32
		fakeAgent(t, map[string]func() any{
			"GET /api/v1/status": func() any { return apitype.Status{Device: apitype.Device{Short: "SELF123"}} },
			"GET /api/v1/peers": func() any {
				return apitype.Peers{Peers: []apitype.Peer{{ID: id, Name: "desk", Paired: paired}}}
			},
			"POST /api/v1/pair/show": func() any {
				return apitype.PairShow{Code: "1234-5678", Expires: time.Now().Add(5 * time.Minute)}
			},
			"GET /api/v1/pair": func() any {
				if polls.Add(1) < 2 {
					return apitype.PairStatus{Open: true}
				}
				return apitype.PairStatus{Last: &apitype.PairResult{Peer: id, Name: "desk", OK: true, At: time.Now()}}
			},
			"POST /api/v1/pair/enter": func() any { return apitype.Peer{ID: id, Name: "desk", Paired: true} },
		})
		wantDone := "Paired with desk (" + id.String() + ")"
		if paired {
			wantDone = "Already paired with desk (" + id.String() + ")"
		}
		code, out, errs := runCmd(t, "pair")
		if code != 0 {
			t.Fatalf("pair: exit %d: %s", code, errs)
		}
		for _, want := range []string{"Pairing code: 1234-5678", "Waiting for the head to enter the code: it expires in 5m0s", wantDone} {
			if !strings.Contains(out, want) {
				t.Errorf("pair (paired before: %v): stdout lacks %q:\n%s", paired, want, out)
			}
		}
		code, out, errs = runCmd(t, "pair", "desk", "1234-5678")
		if code != 0 || !strings.HasPrefix(out, wantDone) {
			t.Errorf("pair desk CODE (paired before: %v): exit %d, stdout %q (%s); want %q", paired, code, out, errs, wantDone)
		}
	}
}
