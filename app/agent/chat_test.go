package agent

import (
	"context"
	"errors"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"homering/app/api/apitype"
	"homering/app/problem"
	"homering/engine/runner"
)

// Every error a chat returns is a problem (app/problem), so the API never
// repairs an engine's words: a failure the engine gives no code for (here
// its supervisor closed) is ChatFailed, over the runner's own error.
func TestChatErrorsAreProblems(t *testing.T) {
	model, err := filepath.Abs(profileModel)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	b := &Agent{dir: t.TempDir(), override: model, threads: 1, log: log, running: map[*chatRun]struct{}{}, work: NewWork()}
	b.sup = runner.New(runner.Options{Command: func() *exec.Cmd { return testChild("runner") }, Log: log})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	hi := apitype.ChatRequest{Messages: []apitype.ChatMessage{{Role: "user", Content: "Hi"}}}
	for _, tc := range []struct {
		name string
		req  apitype.ChatRequest
		code problem.Code
		is   error
	}{
		{"empty", apitype.ChatRequest{}, problem.EmptyConversation, nil},
		{"engine closed", hi, problem.ChatFailed, runner.ErrClosed},
	} {
		_, err := b.Chat(context.Background(), tc.req, func(string) error { return nil })
		var pe *problem.Error
		if !errors.As(err, &pe) || pe.Code != tc.code || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: Chat error %#v, want problem %s over %v", tc.name, err, tc.code, tc.is)
		}
	}
}

// An engine that died is worded by how it died: killed for lack of memory
// (free memory), killed from outside with nothing in its log (neither the
// file nor the machine is to blame), or a crash (the file may be damaged).
func TestEngineDeathWords(t *testing.T) {
	b := &Agent{log: slog.New(slog.DiscardHandler)}
	for _, tc := range []struct {
		name      string
		died      runner.DiedError
		want, not string
	}{
		{"out of memory", runner.DiedError{State: "signal: killed", Signal: "SIGKILL", OOM: true, During: "generating"},
			"memory ran out while generating", "damaged"},
		{"killed from outside", runner.DiedError{State: "signal: killed", Signal: "SIGKILL", During: "generating"},
			"killed from outside (SIGKILL, not for lack of memory) while generating", "damaged"},
		{"crash", runner.DiedError{State: "signal: aborted", Signal: "SIGABRT", Crash: "SIGABRT: abort", Stderr: []string{"SIGABRT: abort"}, During: "generating"},
			"damaged or too big for this machine", "memory ran out"},
		{"killed after an error it logged", runner.DiedError{State: "signal: killed", Signal: "SIGKILL", Stderr: []string{`level=ERROR msg="cannot map the slice"`}, During: "generating"},
			"damaged or too big", "killed from outside"},
	} {
		err := b.problem("m.gguf", &tc.died)
		var pe *problem.Error
		if !errors.As(err, &pe) || pe.Code != problem.EngineDied || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.not) {
			t.Errorf("%s: %v, want problem %s saying %q, not %q", tc.name, err, problem.EngineDied, tc.want, tc.not)
		}
	}
}
