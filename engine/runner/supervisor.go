package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"homering/engine/profile/sysinfo"
)

// Sentinels of the parent side.
var (
	ErrClosed   = errors.New("runner: the supervisor is closed")
	ErrProtocol = errors.New("runner: the engine process broke the protocol")
)

// DiedError is the failure of a call whose child process died. It carries
// what a person needs to understand why: how it ended and its last words.
type DiedError struct {
	State  string   // "signal: aborted", "exit status 2", …
	Signal string   // "SIGABRT" when killed by a signal, else ""
	Stderr []string // the child's last stderr lines, oldest first
	Crash  string   // the first stderr line that names a crash ("SIGABRT: abort", "GGML_ASSERT…", "panic: …"), if any
	During string   // what it was doing: "loading /m.gguf", "generating"
	// Model is the model file the engine had mapped and ModelChange how
	// that file changed on disk since ("was cut short from 1634400 to
	// 817200 bytes", "was deleted"; modelfile.go): a file cut short under
	// the mapping kills the engine with SIGBUS. "" when it did not change.
	Model, ModelChange string
	// OOM: it died of SIGKILL while the kernel's out-of-memory killer
	// killed (sysinfo.OOMKills grew over its life): memory ran out, on the
	// machine or in its cgroup, rather than a person or another program
	// ending it. False where the OS does not say.
	OOM bool
}

func (e *DiedError) Error() string {
	s := fmt.Sprintf("runner: the engine process died (%s) while %s", e.State, e.During)
	if l := e.LastLine(); l != "" {
		s += ": " + l
	}
	return s
}

// LastLine is the most telling stderr line: the last one that is not a Go
// goroutine dump, blank or the child's own log below ERROR. A child killed
// from outside (SIGKILL) leaves only its log, whose last line ("ring job
// kept from the last request", "ring lost devices; re-planning without
// them") says nothing about its end: then "", and a caller words the exit
// state instead.
func (e *DiedError) LastLine() string {
	if e.Crash != "" {
		return e.Crash
	}
	for i := len(e.Stderr) - 1; i >= 0; i-- {
		l := strings.TrimSpace(e.Stderr[i])
		if l == "" || strings.HasPrefix(l, "goroutine ") || strings.HasPrefix(l, "\t") ||
			strings.HasPrefix(l, "/") || strings.HasPrefix(l, "created by") || strings.HasSuffix(l, ")") && strings.Contains(l, "(0x") {
			continue
		}
		if strings.HasPrefix(l, "time=") && (strings.Contains(l, " level=INFO ") || strings.Contains(l, " level=DEBUG ") || strings.Contains(l, " level=WARN ")) {
			continue
		}
		// Prefer the line naming the abort over a trailing register dump.
		return l
	}
	return ""
}

// RequestError is an error event of the child: the request failed but the
// child lives on.
type RequestError struct {
	Code string
	Text string
}

func (e *RequestError) Error() string { return e.Text }

// Options configure a Supervisor.
type Options struct {
	// Command builds the child's command; it must run Main. Required.
	Command func() *exec.Cmd
	Log     *slog.Logger // nil: discard
	// MinBackoff is the wait before restarting after one death, doubled per
	// further death in a row up to MaxBackoff. 0: 250 ms and 30 s.
	MinBackoff, MaxBackoff time.Duration
	// StderrLines is how many of the child's last stderr lines a DiedError
	// keeps. 0: 40 (a Go crash prints a header, then goroutines).
	StderrLines int
	// OnRefused, when set, hears what the child's ring links refused
	// (EvRefused: counts by reason since its previous report), for the
	// agent's refusal counts (`homering doctor`). It runs on the child's
	// reader and must not block.
	OnRefused func(map[string]uint64)
}

// Supervisor owns the runner child of an agent: it starts it on demand,
// loads models, streams generations and restarts it after a death. Calls are
// serialized: one generation at a time, as the engine runs one, except ring
// generations on one model, which run at once as streams of one ring job
// (ringgroup.go).
type Supervisor struct {
	opt Options
	log *slog.Logger
	sem chan struct{} // one call at a time; holds p, model, deaths

	p      *proc      // nil: no child running
	model  LoadParams // what p has loaded ("" Model: nothing)
	info   ModelInfo
	deaths int       // deaths in a row, for the backoff
	died   time.Time // when the last one died
	nextID atomic.Uint64

	// group is the ring generations running at once on the child (ring.go,
	// RingGenerate); it holds sem until its last one ends. formed is
	// closed when a group forms, so that a RingGenerate waiting for sem
	// joins it instead. Both guarded by gmu.
	gmu    sync.Mutex
	group  *ringGroup
	formed chan struct{}

	// loadedFile is model's file as it was when loaded: a request on a
	// changed file loads it again (modelfile.go). mapped is the model file
	// the child was last given (a load or a ring generation) and
	// mappedFile that file as it was then: a death names the change.
	loadedFile os.FileInfo
	mapped     string
	mappedFile os.FileInfo

	serveID uint64 // the child's serve_ring request; 0 when not serving
	// serving (what it serves with) and serveAddr are written with both
	// sem and smu held, so ServeRing can read them under smu alone while a
	// call of this agent's own (a chat) holds sem.
	smu       sync.Mutex
	serving   *ServeParams
	serveAddr string
	serveStop chan struct{} // closed when serving ends (StopServing, a death)
	// job is the child's last EvJob while serving (nil: none, or serving
	// ended); guarded by smu, written by the child's reader.
	job *Serving

	closeOnce sync.Once
	closed    chan struct{}

	// pid is the running child's, 0 when none: written with sem held,
	// read without it (EngineAnon answers while a chat holds sem).
	pid atomic.Int64
}

// New returns a Supervisor; no process starts until the first call.
func New(opt Options) *Supervisor {
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.MinBackoff <= 0 {
		opt.MinBackoff = 250 * time.Millisecond
	}
	if opt.MaxBackoff <= 0 {
		opt.MaxBackoff = 30 * time.Second
	}
	if opt.StderrLines <= 0 {
		opt.StderrLines = 40
	}
	return &Supervisor{opt: opt, log: opt.Log, sem: make(chan struct{}, 1), closed: make(chan struct{}), formed: make(chan struct{})}
}

func (s *Supervisor) lock(ctx context.Context) error {
	select {
	case s.sem <- struct{}{}:
		select {
		case <-s.closed:
			<-s.sem
			return ErrClosed
		default:
			return nil
		}
	case <-ctx.Done():
		return ctx.Err()
	case <-s.closed:
		return ErrClosed
	}
}

func (s *Supervisor) unlock() { <-s.sem }

// Backoff is how long a restart waits after n deaths in a row.
func Backoff(n int, lo, hi time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	return min(d, hi)
}

// started starts the child when none runs (after the backoff a death in a
// row asks for), and notices one that died between calls.
func (s *Supervisor) started(ctx context.Context) error {
	if s.p != nil {
		select {
		case <-s.p.exited:
			err := s.dead("idle")
			s.log.Info("restarting the engine process", "after", err)
		default:
			return nil
		}
	}
	if wait := Backoff(s.deaths, s.opt.MinBackoff, s.opt.MaxBackoff) - time.Since(s.died); s.deaths > 0 && wait > 0 {
		s.log.Info("waiting before restarting the engine", "after_deaths", s.deaths, "wait", wait.Round(time.Millisecond))
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	p, err := s.start()
	if err != nil {
		return err
	}
	s.p, s.model = p, LoadParams{}
	return nil
}

// ensure starts the child when none runs and loads lp into it.
func (s *Supervisor) ensure(ctx context.Context, lp LoadParams) error {
	now := statModel(lp.Model)
	if s.p != nil && s.model == lp {
		if sameModel(now, s.loadedFile) {
			s.mapped, s.mappedFile = lp.Model, s.loadedFile
			return nil
		}
		s.log.Info("the model file changed on disk since it was loaded; loading it again", "path", lp.Model,
			"change", modelChange(lp.Model, s.loadedFile))
	}
	if err := s.started(ctx); err != nil {
		return err
	}
	s.mapped, s.mappedFile = lp.Model, now
	id := s.id()
	if err := s.p.send(Request{ID: id, Op: OpLoad, Load: &lp}); err != nil {
		return s.dead("loading " + lp.Model)
	}
	for {
		ev, err := s.next(ctx, "loading "+lp.Model)
		if err != nil {
			return err
		}
		if ev.ID != id {
			continue // a late event of an earlier request
		}
		switch ev.Type {
		case EvLoaded:
			s.model, s.loadedFile = lp, now
			if ev.Model != nil {
				s.info = *ev.Model
			}
			return nil
		case EvError:
			s.model = LoadParams{}
			return &RequestError{Code: ev.Code, Text: ev.Error}
		}
	}
}

func (s *Supervisor) id() uint64 { return s.nextID.Add(1) }

// next waits for the child's next event. When the child dies it returns a
// *DiedError and forgets the child; when ctx ends it returns ctx's error and
// leaves the child to the caller.
func (s *Supervisor) next(ctx context.Context, during string) (Event, error) {
	select {
	case ev, ok := <-s.p.events:
		if !ok {
			return Event{}, s.dead(during)
		}
		return ev, nil
	case <-ctx.Done():
		return Event{}, ctx.Err()
	}
}

// dead waits for the child to be reaped and turns its end into a DiedError.
func (s *Supervisor) dead(during string) error {
	p := s.p
	s.p, s.model = nil, LoadParams{}
	s.pid.Store(0)
	s.endServing()
	p.kill() // a protocol error leaves a live child: end it
	<-p.exited
	s.deaths++
	s.died = time.Now()
	e := &DiedError{State: "exited", Stderr: p.tail.Lines(), Crash: p.tail.Crash(), During: during,
		Model: s.mapped, ModelChange: modelChange(s.mapped, s.mappedFile)}
	if p.protoErr != nil {
		e.State = p.protoErr.Error()
	}
	var xe *exec.ExitError
	if errors.As(p.waitErr, &xe) {
		e.State = xe.ProcessState.String()
		if ws, ok := xe.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = signalName(ws.Signal())
			if ws.Signal() == syscall.SIGKILL && p.oomKillsOK {
				n, ok := sysinfo.OOMKills()
				e.OOM = ok && n > p.oomKills
			}
		}
	} else if p.waitErr != nil {
		e.State = p.waitErr.Error()
	}
	// Go's runtime catches fatal signals (a C abort() too), prints
	// "SIGABRT: abort" and exits with status 2: name the signal from that.
	if e.Signal == "" {
		for _, sig := range []string{"SIGABRT", "SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE"} {
			if strings.HasPrefix(e.Crash, sig+":") {
				e.Signal = sig
				e.State += " after " + sig
			}
		}
	}
	s.log.Error("engine process died", "state", e.State, "during", during, "last", e.LastLine(), "deaths_in_a_row", s.deaths)
	return e
}

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGBUS:
		return "SIGBUS"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// Model returns what the child has loaded (zero when nothing).
func (s *Supervisor) Model() ModelInfo {
	if s.lock(context.Background()) != nil {
		return ModelInfo{}
	}
	defer s.unlock()
	if s.p == nil || s.model.Model == "" {
		return ModelInfo{}
	}
	return s.info
}

// PID is the child's process ID, 0 when none runs.
func (s *Supervisor) PID() int {
	if s.lock(context.Background()) != nil {
		return 0
	}
	defer s.unlock()
	if s.p == nil {
		return 0
	}
	return s.p.cmd.Process.Pid
}

// EngineAnon is the child's resident anonymous memory (0 when none runs):
// what the engine holds between requests (a ring job kept for the next
// turn, a worker's idle job, a loaded model's caches), which the next job
// replaces. It never waits for a call in progress.
func (s *Supervisor) EngineAnon() int64 {
	return sysinfo.ProcessAnonOf(int(s.pid.Load()))
}

// Generate loads lp (when the child has another model or none) and runs g,
// calling emit for every token. Cancelling ctx stops the generation (the
// child is told to stop and Generate returns its stats with reason
// "cancelled" and ctx's error). An emit error also stops it and is returned.
func (s *Supervisor) Generate(ctx context.Context, lp LoadParams, g GenerateParams, emit func(Token) error) (Stats, error) {
	if err := s.lock(ctx); err != nil {
		return Stats{}, err
	}
	defer s.unlock()
	if err := s.ensure(ctx, lp); err != nil {
		return Stats{}, err
	}
	id := s.id()
	if err := s.p.send(Request{ID: id, Op: OpGenerate, Generate: &g}); err != nil {
		return Stats{}, s.dead("generating")
	}
	return s.stream(ctx, id, emit, nil)
}

// stream follows generation id to its end: tokens go to emit, other events
// of id to other (whose error stops the generation, as emit's does).
func (s *Supervisor) stream(ctx context.Context, id uint64, emit func(Token) error, other func(Event) error) (Stats, error) {
	p := s.p
	st, err := s.follow(ctx, id, p, p.events, func(during string) error { return s.dead(during) }, func() {
		p.kill()
		_ = s.dead("stopping")
		s.deaths = 0 // we killed it: no backoff
	}, emit, other)
	if err == nil {
		s.deaths = 0
	}
	return st, err
}

// follow is stream over events, the events of child p for id (closed when
// it dies: then died makes the error); kill kills it after a stop that
// did not end the generation in time.
func (s *Supervisor) follow(ctx context.Context, id uint64, p *proc, events <-chan Event, died func(during string) error, kill func(),
	emit func(Token) error, other func(Event) error) (Stats, error) {
	var stopErr error // why we asked the child to stop
	stop := func(err error) {
		if stopErr == nil {
			stopErr = err
			_ = p.send(Request{ID: s.id(), Op: OpStop, Target: id})
		}
	}
	// After a stop, wait this long for the child's done before killing it.
	var stopDeadline <-chan time.Time
	for {
		var ev Event
		var ok bool
		select {
		case ev, ok = <-events:
			if !ok {
				return Stats{}, died("generating")
			}
		case <-ctx.Done():
			if stopErr == nil {
				stop(ctx.Err())
				stopDeadline = time.After(10 * time.Second)
			}
			select {
			case ev, ok = <-events:
				if !ok {
					return Stats{}, died("generating")
				}
			case <-stopDeadline:
				s.log.Warn("engine did not stop in time; killing it")
				kill()
				return Stats{Reason: ReasonCancelled}, stopErr
			}
		}
		if ev.ID != id {
			continue
		}
		switch ev.Type {
		case EvToken:
			if stopErr == nil && ev.Token != nil {
				if err := emit(*ev.Token); err != nil {
					stop(err)
					stopDeadline = time.After(10 * time.Second)
				}
			}
		case EvDone:
			st := Stats{}
			if ev.Stats != nil {
				st = *ev.Stats
			}
			if stopErr != nil {
				return st, stopErr
			}
			return st, nil
		case EvError:
			return Stats{}, &RequestError{Code: ev.Code, Text: ev.Error}
		default:
			if other != nil && stopErr == nil {
				if err := other(ev); err != nil {
					stop(err)
					stopDeadline = time.After(10 * time.Second)
				}
			}
		}
	}
}

// Unload frees the model in the child (the child keeps running).
func (s *Supervisor) Unload(ctx context.Context) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	if s.p == nil {
		return nil
	}
	answered, err := s.request(ctx, OpUnload, "unloading")
	if answered {
		s.model = LoadParams{}
	}
	return err
}

// request sends op to the child and waits for its answer; s locked, with a
// child. answered is false when none came (the child died, or ctx ended and
// the child is left to the caller); an answer that is an error is a
// *RequestError.
func (s *Supervisor) request(ctx context.Context, op, during string) (answered bool, err error) {
	id := s.id()
	if err := s.p.send(Request{ID: id, Op: op}); err != nil {
		return false, s.dead(during)
	}
	for {
		ev, err := s.next(ctx, during)
		if err != nil {
			return false, err
		}
		if ev.ID == id {
			if ev.Type == EvError {
				return true, &RequestError{Code: ev.Code, Text: ev.Error}
			}
			return true, nil
		}
	}
}

// Close ends the child (stdin closed, then SIGKILL after 5 s) and refuses
// further calls. A call in flight is cancelled by the caller's ctx, not here.
func (s *Supervisor) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	s.sem <- struct{}{}
	defer func() { <-s.sem }()
	s.end()
	return nil
}

// Restart ends the child once no call holds it, as Close does, and the
// next call starts a fresh one (Options.Command again, without backoff): the
// agent restarts it when something the child reads only at start changes
// (its gpu setting: GPU backends load once per process). Serving for other
// heads ends with it; their rings re-plan as for any lost device.
func (s *Supervisor) Restart(ctx context.Context) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	s.end()
	return nil
}

// end ends the child, if any; s locked.
func (s *Supervisor) end() {
	if s.p == nil {
		return
	}
	p := s.p
	s.p, s.model = nil, LoadParams{}
	s.pid.Store(0)
	s.endServing()
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		p.kill()
		<-p.exited
	}
}

// proc is one running child.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	mu     sync.Mutex // guards enc: the generations of a ring group send at once
	enc    *json.Encoder
	events chan Event    // closed when stdout ends
	exited chan struct{} // closed after Wait; then waitErr, protoErr are set
	tail   *tailWriter

	waitErr  error
	protoErr error

	oomKills   int64 // sysinfo.OOMKills when it started
	oomKillsOK bool
}

func (p *proc) send(r Request) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.enc.Encode(r)
}

func (p *proc) kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
}

func (s *Supervisor) start() (*proc, error) {
	cmd := s.opt.Command()
	childAttrs(cmd)
	tail := newTailWriter(s.opt.StderrLines, s.log)
	cmd.Stderr = tail
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("runner: start the engine process %s: %w", cmd.Path, err)
	}
	if err := childStarted(cmd); err != nil {
		// Best effort: the child must not run untied; the tie's error is
		// the one worth reporting.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("runner: tie the engine process to this one: %w", err)
	}
	p := &proc{cmd: cmd, stdin: stdin, enc: json.NewEncoder(stdin), events: make(chan Event, 64), exited: make(chan struct{}), tail: tail}
	p.oomKills, p.oomKillsOK = sysinfo.OOMKills()
	go func() {
		defer close(p.exited)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), MaxLine)
		first := true
		for sc.Scan() {
			var ev Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				p.protoErr = fmt.Errorf("%w: %q is not an event", ErrProtocol, truncate(sc.Text(), 80))
				break
			}
			if first {
				first = false
				if ev.Type != EvHello || ev.Proto != Proto {
					p.protoErr = fmt.Errorf("%w: it speaks protocol %d, this agent %d; both must come from the same build", ErrProtocol, ev.Proto, Proto)
					break
				}
				continue
			}
			if ev.Type == EvJob {
				// Unasked and unawaited: kept, never queued among the
				// answers a call waits for.
				if ev.Serving != nil {
					s.smu.Lock()
					s.job = ev.Serving
					s.smu.Unlock()
				}
				continue
			}
			if ev.Type == EvRefused {
				if s.opt.OnRefused != nil && len(ev.Refused) > 0 {
					s.opt.OnRefused(ev.Refused)
				}
				continue
			}
			p.events <- ev
		}
		if p.protoErr == nil && sc.Err() != nil {
			p.protoErr = fmt.Errorf("%w: %v", ErrProtocol, sc.Err())
		}
		close(p.events)
		if p.protoErr != nil {
			p.kill()
		}
		_, _ = io.Copy(io.Discard, stdout) // let the child finish writing before Wait closes the pipe
		p.waitErr = cmd.Wait()
	}()
	s.log.Info("engine process started", "pid", cmd.Process.Pid)
	s.pid.Store(int64(cmd.Process.Pid))
	return p, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// tailWriter keeps the last n lines written to it and logs each at debug.
type tailWriter struct {
	mu    sync.Mutex
	n     int
	lines []string
	part  []byte
	crash string // first crash-looking line; kept even when it scrolls out of lines
	log   *slog.Logger
}

func newTailWriter(n int, log *slog.Logger) *tailWriter { return &tailWriter{n: n, log: log} }

func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.part = append(t.part, b...)
	for {
		i := strings.IndexByte(string(t.part), '\n')
		if i < 0 {
			break
		}
		t.add(string(t.part[:i]))
		t.part = t.part[i+1:]
	}
	if len(t.part) > 4096 { // a line without end: keep it bounded
		t.add(string(t.part))
		t.part = t.part[:0]
	}
	return len(b), nil
}

// crashMarkers start (or are) the line a crash report leads with: Go's
// runtime, ggml's asserts, C++'s terminate and glibc's own aborts.
var crashMarkers = []string{"panic:", "fatal error:", "SIGABRT", "SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE",
	"GGML_ASSERT", "GGML_ABORT", "terminate called", "double free", "corrupted", "Assertion"}

func isCrashLine(l string) bool {
	for _, m := range crashMarkers {
		if strings.Contains(l, m) {
			return true
		}
	}
	return false
}

// Crash returns the first line that looked like a crash report.
func (t *tailWriter) Crash() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.crash
}

func (t *tailWriter) add(l string) {
	// The engine's warnings and errors (a ring that lost a device, a
	// refused link) are the agent's too: its log at the default level says
	// what happened in the engine, with the engine's own time.
	if strings.Contains(l, " level=WARN ") || strings.Contains(l, " level=ERROR ") {
		t.log.Warn("runner", "stderr", l)
	} else {
		t.log.Debug("runner", "stderr", l)
	}
	if t.crash == "" && isCrashLine(l) {
		t.crash = strings.TrimSpace(l)
	}
	t.lines = append(t.lines, l)
	if len(t.lines) > t.n {
		t.lines = t.lines[len(t.lines)-t.n:]
	}
}

// Lines returns the kept lines, oldest first, with any unfinished line last.
func (t *tailWriter) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.lines...)
	if len(t.part) > 0 {
		out = append(out, string(t.part))
	}
	return out
}
