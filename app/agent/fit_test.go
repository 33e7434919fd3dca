package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/app/problem"
	"homering/engine/head"
	"homering/engine/runner"
	"homering/internal/testlog"
)

// msg is a message of n bytes.
func msg(role string, n int) runner.Message {
	return runner.Message{Role: role, Content: strings.Repeat("x", n)}
}

// TestLeaveOut: the fewest oldest messages after a system message that
// bring the estimate within the budget, whole turns at a time, never the
// last message. With 1 token per byte a message of n bytes costs
// n+msgOverhead (16) tokens.
func TestLeaveOut(t *testing.T) {
	sys := msg("system", 84) // 100
	u, a := msg("user", 84), msg("assistant", 84)
	tests := []struct {
		name   string
		msgs   []runner.Message
		budget int
		want   int
	}{
		{"fits: nothing left out", []runner.Message{sys, u, a, u}, 400, 0},
		{"exactly fits", []runner.Message{u, a, u}, 300, 0},
		{"one turn out", []runner.Message{u, a, u, a, u}, 300, 2},
		{"the system message is kept and counted", []runner.Message{sys, u, a, u, a, u}, 300, 4},
		{"all but the last when nothing fits", []runner.Message{sys, u, a, u}, 50, 2},
		{"a lone message is never left out", []runner.Message{sys, u}, 10, 0},
		{"no messages", nil, 10, 0},
		{"a kept turn starts with the user", []runner.Message{u, a, a, u}, 250, 3},
		{"two user messages in a row split anywhere", []runner.Message{u, u, u}, 200, 1},
		{"an assistant last message is kept", []runner.Message{u, a, u, a}, 100, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := leaveOut(tt.msgs, 1, tt.budget); got != tt.want {
				t.Errorf("leaveOut = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestReserve(t *testing.T) {
	tests := []struct{ nCtx, maxTokens, want int }{
		{4096, 0, 1024}, // to the end of the answer: a quarter of the context
		{4096, 100, 100},
		{4096, 9000, 2048}, // at most half
		{256, 0, 64},
	}
	for _, tt := range tests {
		if got := reserve(tt.nCtx, tt.maxTokens); got != tt.want {
			t.Errorf("reserve(%d, %d) = %d, want %d", tt.nCtx, tt.maxTokens, got, tt.want)
		}
	}
}

// TestTooLongMatchesEngine holds tooLongText to the engine's own refusal,
// as the runner child sends it (package prefixes dropped), and nothing else.
func TestTooLongMatchesEngine(t *testing.T) {
	engine := head.CheckContext(300, 256)
	text, _ := strings.CutPrefix(engine.Error(), "head: ")
	n, nCtx, ok := tooLong(&runner.RequestError{Code: runner.CodeBadRequest, Text: text})
	if !ok || n != 300 || nCtx != 256 {
		t.Errorf("tooLong(%q) = %d, %d, %v; want 300, 256, true", text, n, nCtx, ok)
	}
	for _, err := range []error{
		nil,
		errors.New(text), // not the child's answer
		&runner.RequestError{Code: runner.CodeGenerate, Text: text},
		&runner.RequestError{Code: runner.CodeBadRequest, Text: "the prompt is empty; give some text"},
	} {
		if _, _, ok := tooLong(err); ok {
			t.Errorf("tooLong(%v) = true", err)
		}
	}
}

// fakeEngine answers like the runner child with 1 token per byte plus
// msgOverhead per message and a context of nCtx, recording the prompts it
// was given.
type fakeEngine struct {
	nCtx  int
	tries [][]runner.Message
}

func (e *fakeEngine) run(g runner.GenerateParams) (runner.Stats, error) {
	e.tries = append(e.tries, g.Messages)
	n := size(g.Messages)
	if err := head.CheckContext(n, e.nCtx); err != nil {
		text, _ := strings.CutPrefix(err.Error(), "head: ")
		return runner.Stats{PromptTokens: n}, &runner.RequestError{Code: runner.CodeBadRequest, Text: text}
	}
	return runner.Stats{PromptTokens: n, Reason: runner.ReasonStop}, nil
}

// TestFitRun: a conversation that outgrows the context runs with its
// oldest turns left out (the system prompt kept); the count learnt from a
// failed attempt leaves out enough at once; a learnt rate trims before
// the engine refuses; the last turn's left-out messages stay out while the
// rest fits; a last message too long fails with ContextFull, and so does
// any long prompt when fitting is off.
func TestFitRun(t *testing.T) {
	sys := msg("system", 84) // 100 tokens
	u, a := msg("user", 84), msg("assistant", 84)
	big := msg("user", 1000)
	tests := []struct {
		name      string
		f         fitter
		msgs      []runner.Message
		wantOmit  int
		wantTries int
		wantErr   string // a ContextFull sentence's start; "": no error
	}{
		{name: "fits", f: fitter{fit: true}, msgs: []runner.Message{sys, u, a, u}, wantTries: 1},
		// 800 tokens in 512: a prompt fits in 512-128 = 384 (a quarter for
		// the reply) and is trimmed to 256 (another quarter for the next
		// turns): the system prompt and the last message.
		{name: "outgrown: oldest turns out after one refusal", f: fitter{fit: true}, msgs: []runner.Message{sys, u, a, u, a, u, a, u}, wantOmit: 6, wantTries: 2},
		// Fits in 512-20 = 492, trimmed to 364: a turn starts with the user.
		{name: "a reply limit is the room kept", f: fitter{fit: true, maxTokens: 20}, msgs: []runner.Message{sys, u, a, u, a, u, a, u}, wantOmit: 6, wantTries: 2},
		{name: "a learnt rate trims first", f: fitter{fit: true, nCtx: 512, perByte: 1}, msgs: []runner.Message{sys, u, a, u, a, u, a, u}, wantOmit: 6, wantTries: 1},
		{name: "a learnt rate keeps room for the reply", f: fitter{fit: true, nCtx: 512, perByte: 1}, msgs: []runner.Message{u, a, u, a, u}, wantOmit: 4, wantTries: 1},
		{name: "an underestimate costs one more try", f: fitter{fit: true, nCtx: 512, perByte: 0.25}, msgs: []runner.Message{sys, u, a, u, a, u, a, u}, wantOmit: 6, wantTries: 2},
		// The last turn left 4 out: the rest (400) still fits in 492, so the
		// prompt starts where it did; without the count it is trimmed to 364.
		{name: "the last turn's left-out messages stay out while the rest fits", f: fitter{fit: true, nCtx: 512, maxTokens: 20, perByte: 1, from: 4},
			msgs: []runner.Message{sys, u, a, u, a, u, a, u}, wantOmit: 4, wantTries: 1},
		{name: "without the last turn's count, trimmed to the target", f: fitter{fit: true, nCtx: 512, maxTokens: 20, perByte: 1},
			msgs: []runner.Message{sys, u, a, u, a, u, a, u}, wantOmit: 6, wantTries: 1},
		{name: "the last turn's count and more when the rest does not fit", f: fitter{fit: true, nCtx: 512, perByte: 1, from: 2},
			msgs: []runner.Message{sys, u, a, u, a, u, a, u}, wantOmit: 6, wantTries: 1},
		{name: "all fits: nothing left out, whatever the last turn's count", f: fitter{fit: true, nCtx: 512, perByte: 1, from: 2}, msgs: []runner.Message{u, a, u}, wantTries: 1},
		{name: "without a learnt rate the last turn's count is taken", f: fitter{fit: true, from: 2}, msgs: []runner.Message{u, a, u}, wantOmit: 2, wantTries: 1},
		{name: "a count that does not start a turn is ignored", f: fitter{fit: true, from: 1}, msgs: []runner.Message{u, a, u}, wantTries: 1},
		{name: "a count beyond the messages is ignored", f: fitter{fit: true, from: 3}, msgs: []runner.Message{u, a, u}, wantTries: 1},
		{name: "without fitting the count is ignored", f: fitter{from: 2}, msgs: []runner.Message{u, a, u}, wantTries: 1},
		{name: "the last message alone is too long", f: fitter{fit: true}, msgs: []runner.Message{sys, u, a, big}, wantOmit: 2, wantTries: 2,
			wantErr: "The last message and the system prompt are too long for the context (1116 tokens; the context holds 512)"},
		{name: "a big message before the last one is left out", f: fitter{fit: true}, msgs: []runner.Message{u, a, big, u}, wantOmit: 3, wantTries: 2},
		{name: "without fitting a long conversation fails", f: fitter{}, msgs: []runner.Message{sys, u, a, u, a, u, a, u}, wantTries: 1,
			wantErr: "The conversation is too long for the context (800 tokens; the context holds 512)"},
		{name: "without fitting one long message fails", f: fitter{}, msgs: []runner.Message{big}, wantTries: 1,
			wantErr: "The last message is too long for the context (1016 tokens; the context holds 512)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &fakeEngine{nCtx: 512}
			st, omit, perByte, err := tt.f.fitRun(runner.GenerateParams{Messages: tt.msgs}, e.run)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("err = %v", err)
			}
			if tt.wantErr != "" {
				var pe *problem.Error
				if !errors.As(err, &pe) || pe.Code != problem.ContextFull || !strings.HasPrefix(pe.Text, tt.wantErr) {
					t.Fatalf("err = %v, want ContextFull %q…", err, tt.wantErr)
				}
			}
			if omit != tt.wantOmit || len(e.tries) != tt.wantTries {
				t.Errorf("left out %d in %d tries, want %d in %d", omit, len(e.tries), tt.wantOmit, tt.wantTries)
			}
			last := e.tries[len(e.tries)-1]
			if diff := cmp.Diff(keptMessages(tt.msgs, omit), last); diff != "" {
				t.Errorf("last prompt (-want +got):\n%s", diff)
			}
			if tt.msgs[0].Role == "system" && last[0].Role != "system" {
				t.Errorf("the system prompt was left out")
			}
			if err == nil && (perByte != 1 || st.PromptTokens > 512) {
				t.Errorf("prompt of %d tokens, learnt %v tokens per byte; want ≤ 512 and 1", st.PromptTokens, perByte)
			}
		})
	}
}

// TestChatFitsContext runs real chats on this device's engine child with a
// context of 256 tokens: a conversation of many turns is answered with its
// oldest turns left out, and the reply says how many; the next turn keeps
// them out and reuses the cached prompt, told the count or not; one
// message longer than the
// context fails with the ContextFull sentence, and the agent answers the
// next request.
func TestChatFitsContext(t *testing.T) {
	home := t.TempDir()
	t.Setenv(config.EnvHome, home)
	log := slog.New(slog.NewTextHandler(testlog.Writer(t), nil))
	model, err := filepath.Abs("../../../shared/models/stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	b := &Agent{sup: runner.New(runner.Options{Command: func() *exec.Cmd { return testChild("runner") }, Log: log}),
		dir: home, override: model, threads: 1, log: log, running: map[*chatRun]struct{}{}}
	t.Cleanup(func() { b.Close() })
	chat := func(msgs []apitype.ChatMessage, fit bool, leftOut int) (apitype.ChatStats, string, error) {
		t.Helper()
		var reply strings.Builder
		st, err := b.Chat(context.Background(), apitype.ChatRequest{Messages: msgs, System: "Tell a story.", NumCtx: 256, MaxTokens: 8, FitContext: fit, LeftOut: leftOut},
			func(s string) error { reply.WriteString(s); return nil })
		return st, reply.String(), err
	}
	var long []apitype.ChatMessage
	for i := range 12 {
		long = append(long, apitype.ChatMessage{Role: "user", Content: fmt.Sprintf("Once upon a time there was a cat number %d.", i)},
			apitype.ChatMessage{Role: "assistant", Content: "She liked to play in the park with her friend."})
	}
	long = append(long, apitype.ChatMessage{Role: "user", Content: "What happened next?"})

	st, reply, err := chat(long, true, 0)
	if err != nil {
		t.Fatalf("a long conversation failed: %v", err)
	}
	if st.LeftOut == 0 || st.LeftOut%2 != 0 || st.LeftOut >= len(long) || st.PromptTokens >= 256 || reply == "" {
		t.Errorf("left out %d of %d messages, prompt %d tokens, reply %q; want whole turns out, a prompt under 256 tokens and a reply", st.LeftOut, len(long), st.PromptTokens, reply)
	}
	// The next turn, told what this one left out, leaves out the same and
	// reads only what is new: the engine's cache holds the rest.
	next := append(long, apitype.ChatMessage{Role: "assistant", Content: reply}, apitype.ChatMessage{Role: "user", Content: "And then?"})
	again, _, err := chat(next, true, st.LeftOut)
	t.Logf("left out %d of %d messages (prompt %d tokens), then %d of %d (prompt %d tokens, %d cached)",
		st.LeftOut, len(long), st.PromptTokens, again.LeftOut, len(next), again.PromptTokens, again.CachedTokens)
	if err != nil || again.LeftOut != st.LeftOut || again.CachedTokens == 0 {
		t.Errorf("the next turn left out %d (err %v) with %d of %d prompt tokens cached; want %d left out and a cached start",
			again.LeftOut, err, again.CachedTokens, again.PromptTokens, st.LeftOut)
	}

	// A client that does not send the count back (Ollama's) asking for
	// that turn again gets the same start: the agent remembers it by the
	// first kept message.
	if st3, _, err := chat(next, true, 0); err != nil || st3.LeftOut != st.LeftOut || st3.CachedTokens == 0 {
		t.Errorf("the turn again without the count left out %d (err %v) with %d of %d prompt tokens cached; want %d left out and a cached start",
			st3.LeftOut, err, st3.CachedTokens, st3.PromptTokens, st.LeftOut)
	}

	huge := []apitype.ChatMessage{{Role: "user", Content: "Hi."}, {Role: "assistant", Content: "Hello."},
		{Role: "user", Content: strings.Repeat("The cat sat on the mat. ", 20)}}
	_, _, err = chat(huge, true, 0)
	var pe *problem.Error
	if !errors.As(err, &pe) || pe.Code != problem.ContextFull || !strings.HasPrefix(pe.Text, "The last message and the system prompt are too long for the context (") {
		t.Errorf("a message longer than the context: %v; want the ContextFull sentence", err)
	}
	if _, _, err := chat(long[:3], false, 0); err != nil {
		t.Errorf("a short conversation after the failure: %v", err)
	}
	if _, _, err := chat(long, false, 0); !errors.As(err, &pe) || !strings.HasPrefix(pe.Text, "The conversation is too long") {
		t.Errorf("a long conversation without fitting: %v; want the ContextFull sentence", err)
	}
}

// TestRememberedStart: the first kept message of a trimmed turn is found
// again at the next turn of its conversation on the same model, where it
// stands as many messages in, and nowhere else.
func TestRememberedStart(t *testing.T) {
	sys, u, a := msg("system", 1), msg("user", 1), msg("assistant", 1)
	first := runner.Message{Role: "user", Content: "the first kept"}
	turn := []runner.Message{sys, u, a, first, a, u}
	next := append(append([]runner.Message{}, turn...), a, u)
	tests := []struct {
		name  string
		model string
		msgs  []runner.Message
		want  int
	}{
		{"the next turn", "m", next, 2},
		{"another model", "other", next, 0},
		{"the message moved", "m", append([]runner.Message{sys, u, a}, next[1:]...), 0},
		{"the message is the last", "m", []runner.Message{sys, u, a, first}, 0},
	}
	b := &Agent{}
	b.rememberStart("m", turn, 2)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := b.rememberedStart(tt.model, tt.msgs); got != tt.want {
				t.Errorf("rememberedStart = %d, want %d", got, tt.want)
			}
		})
	}
	b.rememberStart("m", turn, 0) // nothing left out: nothing to remember
	if len(b.starts) != 1 {
		t.Errorf("%d starts remembered, want 1", len(b.starts))
	}
	for i := range maxStarts {
		b.rememberStart("m", []runner.Message{u, {Role: "user", Content: fmt.Sprint(i)}}, 1)
	}
	if len(b.starts) > maxStarts {
		t.Errorf("%d starts remembered, want at most %d", len(b.starts), maxStarts)
	}
}
