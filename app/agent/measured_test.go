package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/app/api/apitype"
)

// gated is a Chatter whose first token waits for a signal, so a test can
// look at the Work list while a chat waits.
type gated struct {
	model   apitype.ServedModel
	reached chan struct{} // a chat is inside Chat
	release chan error    // nil: stream a token; an error: fail with it
	stats   apitype.ChatStats
}

func (g *gated) Chat(ctx context.Context, req apitype.ChatRequest, emit func(string) error) (apitype.ChatStats, error) {
	g.reached <- struct{}{}
	if err := <-g.release; err != nil {
		return apitype.ChatStats{}, err
	}
	if err := emit("tok"); err != nil {
		return apitype.ChatStats{}, err
	}
	return g.stats, nil
}
func (g *gated) StopChat(string) int           { return 0 }
func (g *gated) Served() []apitype.ServedModel { return []apitype.ServedModel{g.model} }
func (g *gated) Running() int                  { return 0 }

// The wait before the first token is a "load" task until the model has
// answered once, then "prompt"; a failure makes the next wait a load again,
// expected to take as long as the last load did (first token minus prompt).
func TestChatWaitIsWork(t *testing.T) {
	g := &gated{model: apitype.ServedModel{Name: "m", Path: "/m.gguf", Size: 3 << 30},
		reached: make(chan struct{}), release: make(chan error),
		stats: apitype.ChatStats{CompletionTokens: 5, TokensPerSecond: 50, PromptMS: 500}}
	w := NewWork()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	store := filepath.Join(t.TempDir(), LoadTimesFile)
	mc := &MeasuredChat{Chatter: g, m: newChatMeter(w, clock, store)}

	type seen struct {
		Kind, Title, Detail string
		ExpectedMs          int64
	}
	step := func(fail error, advance time.Duration) seen {
		t.Helper()
		done := make(chan error, 1)
		go func() {
			_, err := mc.Chat(context.Background(), apitype.ChatRequest{}, func(string) error { return nil })
			done <- err
		}()
		<-g.reached
		list := w.List(now)
		if len(list) != 1 {
			t.Fatalf("work while waiting = %+v, want one task", list)
		}
		now = now.Add(advance) // the chat goroutine is parked: no race on now
		g.release <- fail
		if err := <-done; !errors.Is(err, fail) {
			t.Fatalf("Chat error %v, want %v", err, fail)
		}
		if left := w.List(now); len(left) != 0 {
			t.Fatalf("work after the chat = %+v, want none", left)
		}
		return seen{list[0].Kind, list[0].Title, list[0].Detail, list[0].ExpectedMs}
	}
	boom := errors.New("engine died")
	got := []seen{step(nil, 2500*time.Millisecond), step(nil, time.Second), step(boom, time.Second), step(nil, time.Second)}
	load := seen{"load", "Loading m", "Reading 3.0 GiB of weights from disk; the reply starts when they are in memory.", 0}
	loadAgain := load
	loadAgain.ExpectedMs = 2000 // 2.5 s to the first token, 0.5 s of it the prompt
	prompt := seen{"prompt", "Reading your message", "The model is loaded; the reply starts once the conversation is read.", 0}
	if diff := cmp.Diff([]seen{load, prompt, prompt, loadAgain}, got); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
	if m := mc.m.measured(); m == nil || *m != 20 {
		t.Errorf("measured = %v, want 20 ms/token", m)
	}

	// After a restart the first load is expected to take as long as the
	// last one did before it.
	mc = &MeasuredChat{Chatter: g, m: newChatMeter(w, clock, store)}
	lastLoad := load
	lastLoad.ExpectedMs = 500 // the fourth wait above: 1 s, 0.5 s of it the prompt
	if got := step(nil, time.Second); got != lastLoad {
		t.Errorf("first wait after a restart = %+v, want %+v", got, lastLoad)
	}
	// A damaged file only loses the estimate.
	if err := os.WriteFile(store, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	mc = &MeasuredChat{Chatter: g, m: newChatMeter(w, clock, store)}
	if got := step(nil, time.Second); got != load {
		t.Errorf("first wait with a damaged %s = %+v, want %+v", LoadTimesFile, got, load)
	}
}

// A chat sent while another runs shows the wait label "Another reply is
// in progress" until its own first token: on a ring beyond the streams
// the plan admits the engine child holds it until a stream is free
// (engine/ring/job, join), after the first reply's end here, and it then
// runs.
func TestChatBeyondAdmittedWaitsWithLabel(t *testing.T) {
	g := &gated{model: apitype.ServedModel{Name: "m", Path: "/m.gguf"},
		reached: make(chan struct{}), release: make(chan error)}
	w := NewWork()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mc := &MeasuredChat{Chatter: g, m: newChatMeter(w, func() time.Time { return now }, "")}
	chat := func() chan error {
		done := make(chan error, 1)
		go func() {
			_, err := mc.Chat(context.Background(), apitype.ChatRequest{}, func(string) error { return nil })
			done <- err
		}()
		<-g.reached
		return done
	}
	first := chat()
	second := chat()
	list := w.List(now)
	queued := slices.IndexFunc(list, func(tk apitype.Task) bool { return tk.Kind == "queue" })
	if len(list) != 2 || queued < 0 || list[queued].Title != "Another reply is in progress" || list[1-queued].Kind == "queue" {
		t.Fatalf("work with a chat beside another = %+v, want the first's wait and the second's queue task", list)
	}
	g.release <- nil // the first reply ends; the second still waits
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if list := w.List(now); len(list) != 1 || list[0].Kind != "queue" {
		t.Fatalf("work after the first reply = %+v, want the second's queue task still", list)
	}
	g.release <- nil // a stream is free: it runs
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if list := w.List(now); len(list) != 0 {
		t.Errorf("work after both replies = %+v, want none", list)
	}
}
