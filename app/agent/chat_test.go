package agent

import (
	"context"
	"errors"
	"log/slog"
	"os/exec"
	"path/filepath"
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
