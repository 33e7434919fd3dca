// Not built for Windows: these tests stop and kill processes with signals
// and read /proc (stdio_windows_test.go covers the Windows child).

//go:build !windows

package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"homering/internal/testlog"
)

const (
	stories260K = "../../../shared/models/stories260K.gguf"
	// A random-weight model (build/gen-models.sh): it rarely ends its turn,
	// so a long generation is long for sure.
	randomModel = "../../testdata/models/llama-F32.gguf"
	childEnv    = "HOMERING_RUNNER_TEST_CHILD"
)

// TestMain lets the test binary be the runner child: the supervisor tests
// exec it with childEnv set, so the child runs the real engine.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		log := slog.New(slog.NewTextHandler(os.Stderr, nil))
		if err := Main(context.Background(), os.Stdin, log); err != nil {
			log.Error("runner", "err", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testlog.Writer(t), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func childCommand() *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	return cmd
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		want time.Duration
	}{
		{"no death", 0, 0},
		{"first death", 1, 100 * time.Millisecond},
		{"second doubles", 2, 200 * time.Millisecond},
		{"fourth", 4, 800 * time.Millisecond},
		{"capped", 10, time.Second},
		{"huge count stays capped", 1000, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Backoff(tc.n, 100*time.Millisecond, time.Second); got != tc.want {
				t.Errorf("Backoff(%d) = %v, want %v", tc.n, got, tc.want)
			}
		})
	}
}

func TestDiedErrorLastLine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"go abort dump", []string{"time=… msg=\"model loaded\"", "SIGABRT: abort", "PC=0x4711 m=0 sigcode=0", "", "goroutine 1 gp=0x1 m=0 [running]:", "main.main()", "\t/src/main.go:3 +0x1", "exit status 2"}, "SIGABRT: abort"},
		{"ggml assert", []string{"ggml.c:1234: GGML_ASSERT(n > 0) failed", "SIGABRT: abort"}, "ggml.c:1234: GGML_ASSERT(n > 0) failed"},
		{"plain exit", []string{"loading", "out of luck", ""}, "out of luck"},
		{"nothing", nil, ""},
		// SIGKILLed mid-reply (issue 21's chaos run): the log says nothing of the end.
		{"killed, log only", []string{`time=2026-11-26T19:30:34.515Z level=INFO msg="ring job kept from the last request" component=runner`, `time=2026-11-26T19:30:34.516Z level=DEBUG msg=step`, `time=2026-11-26T19:34:43.089Z level=WARN msg="ring lost devices; re-planning without them" component=runner`}, ""},
		{"error logged", []string{`time=2026-11-26T19:30:34.515Z level=ERROR msg="cannot map the slice"`, `time=2026-11-26T19:30:34.516Z level=INFO msg=closing`}, `time=2026-11-26T19:30:34.515Z level=ERROR msg="cannot map the slice"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tw := newTailWriter(5, slog.New(slog.DiscardHandler))
			for _, l := range tc.lines {
				_, _ = io.WriteString(tw, l+"\n")
			}
			e := &DiedError{Stderr: tw.Lines(), Crash: tw.Crash()}
			if got := e.LastLine(); got != tc.want {
				t.Errorf("LastLine = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTailWriterKeepsLastLines(t *testing.T) {
	tw := newTailWriter(3, slog.New(slog.DiscardHandler))
	_, _ = io.WriteString(tw, "a\nb\nc")
	_, _ = io.WriteString(tw, "c\nd\ne\nunfinished")
	if diff := cmp.Diff([]string{"c" + "c", "d", "e", "unfinished"}, tw.Lines()); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

// The engine's warnings and errors reach the agent's log at its default
// level (a ring's loss, a refused link); its other lines only at debug.
func TestTailWriterLevels(t *testing.T) {
	var b strings.Builder
	tw := newTailWriter(5, slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelInfo})))
	_, _ = io.WriteString(tw, `time=2026-11-26T19:30:34.515Z level=INFO msg="ring job kept from the last request"`+"\n")
	_, _ = io.WriteString(tw, `time=2026-11-26T19:34:43.089Z level=WARN msg="ring lost devices; re-planning without them"`+"\n")
	_, _ = io.WriteString(tw, `time=2026-11-26T19:34:44.001Z level=ERROR msg="ring compute failed"`+"\n")
	log := b.String()
	if strings.Contains(log, "ring job kept") || !strings.Contains(log, "ring lost devices") || !strings.Contains(log, "ring compute failed") {
		t.Errorf("agent log:\n%s\nwant the engine's WARN and ERROR lines, not its INFO line", log)
	}
}

// protoConn drives Serve in-process over pipes, as the parent does.
type protoConn struct {
	t   *testing.T
	in  *io.PipeWriter
	sc  *bufio.Scanner
	enc *json.Encoder
}

func serve(t *testing.T) *protoConn {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Serve(context.Background(), inR, outW, testLogger(t))
		_ = outW.Close()
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }() // drain until the child closes it
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	c := &protoConn{t: t, in: inW, sc: bufio.NewScanner(outR), enc: json.NewEncoder(inW)}
	if ev := c.next(); ev.Type != EvHello || ev.Proto != Proto {
		t.Fatalf("first event %+v, want hello proto %d", ev, Proto)
	}
	return c
}

func (c *protoConn) send(r Request) { _ = c.enc.Encode(r) } // a closed pipe shows as the child's missing answer

func (c *protoConn) next() Event {
	c.t.Helper()
	if !c.sc.Scan() {
		c.t.Fatalf("no event: %v", c.sc.Err())
	}
	var ev Event
	if err := json.Unmarshal(c.sc.Bytes(), &ev); err != nil {
		c.t.Fatal(err)
	}
	return ev
}

// until reads events until one of id ends it and returns the text streamed.
func (c *protoConn) until(id uint64) (string, Event) {
	c.t.Helper()
	var b strings.Builder
	for {
		ev := c.next()
		if ev.ID != id {
			continue
		}
		switch ev.Type {
		case EvToken:
			b.WriteString(ev.Token.Text)
		default:
			return b.String(), ev
		}
	}
}

func greedy(max int) *GenerateParams {
	g := DefaultGenerate()
	g.Temperature = 0
	g.MaxTokens = max
	return &g
}

func TestServeProtocol(t *testing.T) {
	c := serve(t)

	c.send(Request{ID: 1, Op: OpGenerate, Generate: greedy(4)})
	if _, ev := c.until(1); ev.Type != EvError || ev.Code != CodeNotLoaded {
		t.Errorf("generate before load: %+v, want error %s", ev, CodeNotLoaded)
	}
	c.send(Request{ID: 2, Op: OpLoad, Load: &LoadParams{Model: "/nonexistent.gguf"}})
	if _, ev := c.until(2); ev.Type != EvError || ev.Code != CodeLoad {
		t.Errorf("load of a missing file: %+v, want error %s", ev, CodeLoad)
	}
	c.send(Request{ID: 3, Op: OpLoad, Load: &LoadParams{Model: stories260K, NCtx: 256, Threads: 1}})
	_, ev := c.until(3)
	if ev.Type != EvLoaded || ev.Model == nil || ev.Model.NCtx != 256 || ev.Model.Layers == 0 {
		t.Fatalf("load: %+v", ev)
	}

	g := greedy(12)
	g.Prompt = "Once upon a time"
	c.send(Request{ID: 4, Op: OpGenerate, Generate: g})
	text1, ev := c.until(4)
	if ev.Type != EvDone || ev.Stats.Reason != ReasonLength || ev.Stats.CompletionTokens != 12 || text1 == "" {
		t.Fatalf("generate: text %q, end %+v", text1, ev)
	}
	c.send(Request{ID: 5, Op: OpGenerate, Generate: g})
	text2, ev := c.until(5)
	if text2 != text1 || ev.Stats.CachedTokens == 0 {
		t.Errorf("greedy again: %q (cached %d), want %q with the prompt cached", text2, ev.Stats.CachedTokens, text1)
	}

	// A long generation, a busy refusal, then stop.
	long := greedy(0)
	long.Prompt = "Once upon a time"
	c.send(Request{ID: 6, Op: OpGenerate, Generate: long})
	if ev := c.next(); ev.ID != 6 || ev.Type != EvToken {
		t.Fatalf("first event of a long generation: %+v", ev)
	}
	c.send(Request{ID: 7, Op: OpUnload})
	c.send(Request{ID: 8, Op: OpStop, Target: 6})
	var busy, done bool
	for !(busy && done) {
		ev := c.next()
		switch {
		case ev.ID == 7 && ev.Type == EvError && ev.Code == CodeBusy:
			busy = true
		case ev.ID == 6 && ev.Type == EvDone:
			done = true
			if r := ev.Stats.Reason; r != ReasonCancelled && r != ReasonStop && r != ReasonLength {
				t.Errorf("stopped generation reason %q", r)
			}
		case ev.ID == 6 && ev.Type == EvToken:
		default:
			t.Fatalf("unexpected event %+v", ev)
		}
	}
	c.send(Request{ID: 9, Op: OpUnload})
	if _, ev := c.until(9); ev.Type != EvUnloaded {
		t.Errorf("unload: %+v", ev)
	}
	c.send(Request{ID: 10, Op: "dance"})
	if _, ev := c.until(10); ev.Code != CodeBadRequest {
		t.Errorf("unknown op: %+v", ev)
	}
}

// supervisorOptions are the tests' supervisor options: the test's log and
// short backoffs.
func supervisorOptions(t *testing.T) Options {
	return Options{Command: childCommand, Log: testLogger(t), MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second}
}

func newSupervisor(t *testing.T) *Supervisor {
	s := New(supervisorOptions(t))
	t.Cleanup(func() { s.Close() })
	return s
}

func collect(ctx context.Context, s *Supervisor, lp LoadParams, g GenerateParams) (string, Stats, error) {
	var b strings.Builder
	st, err := s.Generate(ctx, lp, g, func(tk Token) error { b.WriteString(tk.Text); return nil })
	return b.String(), st, err
}

func TestSupervisorGenerates(t *testing.T) {
	s := newSupervisor(t)
	lp := LoadParams{Model: stories260K, NCtx: 256, Threads: 1}
	g := *greedy(16)
	g.Messages = []Message{{Role: "user", Content: "Tell me a story."}}
	text, st, err := collect(context.Background(), s, lp, g)
	if err != nil {
		t.Fatal(err)
	}
	if text == "" || st.CompletionTokens == 0 || st.PromptTokens == 0 {
		t.Fatalf("text %q stats %+v", text, st)
	}
	pid := s.PID()
	// The child's own memory, which the agent credits to its plans
	// (app/agent withEngineMemory): its heap and the loaded model's caches.
	if a := s.EngineAnon(); a < 1<<20 {
		t.Errorf("EngineAnon = %d bytes with a model loaded, want the child's anonymous memory", a)
	}
	again, _, err := collect(context.Background(), s, lp, g)
	if err != nil || again != text {
		t.Errorf("second greedy run: %q, %v; want %q", again, err, text)
	}
	if s.PID() != pid {
		t.Errorf("the child was restarted between two good generations")
	}
	if m := s.Model(); m.Path != stories260K || m.NCtx != 256 {
		t.Errorf("Model() = %+v", m)
	}

	// Cancelling ctx stops the generation and leaves the child usable.
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	long := *greedy(0)
	long.Prompt = "Once"
	st, err = s.Generate(ctx, lp, long, func(Token) error {
		if n++; n == 2 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) && (err != nil || st.Reason == ReasonCancelled) {
		t.Errorf("cancelled generation: %+v, %v", st, err)
	}
	if _, _, err := collect(context.Background(), s, lp, g); err != nil {
		t.Errorf("after a cancel: %v", err)
	}

	// A file that is not a model is a request error; the child lives on.
	_, _, err = collect(context.Background(), s, LoadParams{Model: "runner_test.go"}, g)
	var re *RequestError
	if !errors.As(err, &re) || re.Code != CodeLoad {
		t.Errorf("loading a Go file: %v, want a load RequestError", err)
	}
	if s.PID() != pid {
		t.Errorf("a bad model file restarted the child")
	}

	// GPU layers reach the engine: this child loads no GPU backend, so
	// asking for one is a load error and the child lives on.
	_, _, err = collect(context.Background(), s, LoadParams{Model: stories260K, NCtx: 256, Threads: 1, GPULayers: 1}, g)
	if !errors.As(err, &re) || re.Code != CodeLoad || !strings.Contains(re.Text, "no GPU device") {
		t.Errorf("one GPU layer without a GPU: %v, want a load RequestError saying there is no GPU", err)
	}
	if s.PID() != pid {
		t.Errorf("a refused GPU layer restarted the child")
	}

	// Restart ends the child; the next call runs in a fresh one at once.
	if err := s.Restart(context.Background()); err != nil || s.PID() != 0 || s.EngineAnon() != 0 {
		t.Fatalf("Restart = %v, child pid %d and %d bytes after it", err, s.PID(), s.EngineAnon())
	}
	if again, _, err := collect(context.Background(), s, lp, g); err != nil || again != text {
		t.Errorf("after Restart: %q, %v; want %q", again, err, text)
	}
	if p := s.PID(); p == 0 || p == pid {
		t.Errorf("child pid %d after Restart, was %d: want a fresh child", p, pid)
	}
}

// TestSupervisorSurvivesAbort kills the child with SIGABRT mid-generation (as
// a C abort in ggml would): the call fails with a DiedError that names the
// signal and the crash line, and the next call runs in a fresh child.
func TestSupervisorSurvivesAbort(t *testing.T) {
	s := newSupervisor(t)
	lp := LoadParams{Model: randomModel, NCtx: 4096, Threads: 1}
	g := *greedy(4000)
	g.Temperature = 1 // sampled, so a random model does not loop on its end token
	g.Prompt = "hello"
	var pid, tokens int
	_, err := s.Generate(context.Background(), lp, g, func(Token) error {
		tokens++
		if tokens == 3 {
			pid = s.p.cmd.Process.Pid // the test holds the supervisor's lock here
			if err := syscall.Kill(pid, syscall.SIGABRT); err != nil {
				t.Errorf("kill: %v", err)
			}
		}
		return nil
	})
	var died *DiedError
	if !errors.As(err, &died) {
		t.Fatalf("Generate after SIGABRT: %v (after %d tokens), want a DiedError", err, tokens)
	}
	if died.Signal != "SIGABRT" || !strings.Contains(died.LastLine(), "SIGABRT") || died.During != "generating" {
		t.Errorf("DiedError = %+v; want signal SIGABRT and its crash line", died)
	}
	t.Logf("problem report: %v", died)

	next := *greedy(8)
	next.Prompt = "Once upon a time"
	text, st, err := collect(context.Background(), s, LoadParams{Model: stories260K, NCtx: 256, Threads: 1}, next)
	if err != nil || st.CompletionTokens == 0 {
		t.Fatalf("the next generation after the abort: %q, %+v, %v", text, st, err)
	}
	if s.PID() == pid || s.PID() == 0 {
		t.Errorf("child pid %d after the abort, killed %d: want a fresh child", s.PID(), pid)
	}
}
