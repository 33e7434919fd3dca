package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"homering/engine/profile"
)

// The agent measures this device in the background: when no valid cached
// profile serves the selected model (profile.Due: none for this hardware and
// thread count, one older than profile.DefaultMaxAge, or one lacking a
// weight type of the model), it runs `homering profile --progress` as a
// child process at low priority (the engine never runs in the agent: a C
// abort there must not take the agent down), shows its steps as a progress
// bar (Work, kind "profile") and lets the child cache the result, where
// profile.LoadCached readers (the ring planner, the device map) find it.
// A chat never waits for it: a chat (or a ring job asked of this device)
// stops a running measurement at once (its numbers would be wrong while the
// engine computes anyway), and measuring resumes from the start after a
// quiet spell.

// Defaults of the background measurement.
const (
	// profileQuiet is how long the agent waits after it starts, and after
	// the last chat or ring job ends, before it measures: a person who
	// just sent a message is likely to send another.
	profileQuiet = 2 * time.Minute
	// profileRetry is the wait after a failed measurement, doubled per
	// further failure in a row up to profileRecheck.
	profileRetry = 5 * time.Minute
	// profileRecheck is how often the agent looks again whether a
	// measurement is due when nothing told it (a model chosen in Settings
	// shows at the next look or the next chat).
	profileRecheck = 30 * time.Minute
	// profileTaskID is the progress bar's task ID and kind.
	profileTaskID = "profile"
	// profileStopWait is how long a stopped child may take to exit before
	// it is killed.
	profileStopWait = 5 * time.Second
)

// errProfileDeferred is a measurement stopped by a chat.
var errProfileDeferred = errors.New("profile: stopped for a chat; measuring again when idle")

// bgProfile runs the background measurement. Busy and Touch are safe to
// call from any goroutine, on a nil *bgProfile too (no measurement).
type bgProfile struct {
	dir     string        // config directory (profiles under it)
	threads int           // the engine's thread count, measured at
	model   func() string // the selected model's path; "" measures without one
	// command builds the child `homering ARGS` (tests run their own binary).
	command func(args ...string) *exec.Cmd
	extra   []string // more flags for the child (tests: a quicker measurement)
	work    *Work    // progress bar; nil: none
	log     *slog.Logger
	quiet   time.Duration // wait after start and after the last chat (profileQuiet)
	retry   time.Duration // 0: profileRetry
	recheck time.Duration // 0: profileRecheck
	// stopWait is how long a stopped child may take to end before it is
	// killed (0: profileStopWait).
	stopWait time.Duration

	mu      sync.Mutex
	active  int       // chats and ring jobs running now
	quietAt time.Time // when the last one ended, or the agent started
	cancel  context.CancelFunc
	wake    chan struct{} // buffered 1: something changed
	stopped int           // measurements stopped for a chat (tests, logs)
}

func newBgProfile(dir string, threads int, model func() string, work *Work, log *slog.Logger) *bgProfile {
	return &bgProfile{dir: dir, threads: threads, model: model, work: work, log: log.With("component", "profile"),
		command: selfCommand, quiet: profileQuiet, wake: make(chan struct{}, 1)}
}

// selfCommand runs this binary (runnerCommand's) with args.
func selfCommand(args ...string) *exec.Cmd {
	cmd := runnerCommand()
	cmd.Args = append(cmd.Args[:1], args...)
	return cmd
}

// profileQuietFromEnv reads HOMERING_PROFILE_QUIET: a duration ("30s"), or
// "off" to never measure in the background. ok is false when unset or
// unparsable (the default applies).
func profileQuietFromEnv(getenv func(string) string) (d time.Duration, off, ok bool) {
	v := strings.TrimSpace(getenv("HOMERING_PROFILE_QUIET"))
	if v == "off" {
		return 0, true, true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, false, false
	}
	return d, false, true
}

// Busy marks a chat as running: a measurement in progress stops now, and
// none starts until done is called and the quiet spell has passed.
func (p *bgProfile) Busy() (done func()) {
	if p == nil {
		return func() {}
	}
	p.mu.Lock()
	p.active++
	p.stopLocked()
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			p.active--
			p.quietAt = time.Now()
			p.mu.Unlock()
			p.poke()
		})
	}
}

// Touch notes brief work for a peer (a head asked this device's profile or
// a job): a measurement in progress stops, and the quiet spell restarts.
func (p *bgProfile) Touch() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.quietAt = time.Now()
	p.stopLocked()
	p.mu.Unlock()
	p.poke()
}

func (p *bgProfile) stopLocked() {
	if p.cancel != nil {
		p.cancel()
		p.cancel = nil
		if p.work != nil {
			p.work.End(profileTaskID) // now, not when the child has exited
		}
		p.stopped++
		p.log.Info("profile: measurement stopped; the machine is needed (it resumes when idle)")
	}
}

// Stopped is how many measurements a chat or ring job stopped.
func (p *bgProfile) Stopped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped
}

func (p *bgProfile) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func orDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// untilQuiet is how long to wait before measuring: -1 while a chat runs.
func (p *bgProfile) untilQuiet() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.active > 0 {
		return -1
	}
	return max(p.quiet-time.Since(p.quietAt), 0)
}

// sleep waits d (-1: until poked) or until poked or ctx ends; it reports
// whether ctx is still alive.
func (p *bgProfile) sleep(ctx context.Context, d time.Duration) bool {
	var timer <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-p.wake:
	case <-timer:
	}
	return true
}

// Run measures whenever due and quiet until ctx ends. The agent runs it in
// a goroutine for its whole life.
func (p *bgProfile) Run(ctx context.Context) {
	p.mu.Lock()
	p.quietAt = time.Now()
	p.mu.Unlock()
	failures := 0
	for {
		if wait := p.untilQuiet(); wait != 0 {
			if !p.sleep(ctx, wait) {
				return
			}
			continue
		}
		model, why := p.due()
		if why == "" {
			if !p.sleep(ctx, orDuration(p.recheck, profileRecheck)) {
				return
			}
			continue
		}
		err := p.measure(ctx, model, why)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errProfileDeferred):
			continue // the next pass waits for the quiet spell
		case err != nil:
			failures++
			wait := min(orDuration(p.retry, profileRetry)<<min(failures-1, 8), orDuration(p.recheck, profileRecheck))
			p.log.Warn("profile: background measurement failed; trying again later", "err", err, "in", wait)
			if !p.sleep(ctx, wait) {
				return
			}
		default:
			failures = 0
		}
	}
}

// due reports the model to measure with and why a measurement is due ("":
// none is).
func (p *bgProfile) due() (model, why string) {
	model = p.model()
	var types []string
	if model != "" {
		var err error
		if types, err = profile.ModelTypes(model); err != nil {
			// The chat says what is wrong with the model; measure the
			// device without it.
			p.log.Debug("profile: the model's types cannot be read; measuring without it", "model", model, "err", err)
			model = ""
		}
	}
	cache := profile.NewCache(filepath.Join(p.dir, profile.CacheDirName), p.log)
	entries, err := cache.Entries()
	if err != nil {
		p.log.Warn("profile: the profile cache cannot be read", "err", err)
		return "", ""
	}
	return model, profile.Due(entries, time.Now(), profile.DefaultMaxAge, p.threads, types)
}

// measure runs one child measurement; a chat starting stops it
// (errProfileDeferred).
func (p *bgProfile) measure(ctx context.Context, model, why string) error {
	var expected time.Duration
	if last, ok, err := profile.LoadCached(p.dir); err == nil && ok {
		expected = time.Duration(last.TookSec * float64(time.Second))
	}
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The bar begins, steps and ends under mu, with the check for a stop:
	// once Busy returns, no bar shows until the next measurement.
	p.mu.Lock()
	if p.active > 0 || time.Since(p.quietAt) < p.quiet {
		p.mu.Unlock()
		return errProfileDeferred // a chat or ring job came in meanwhile
	}
	p.cancel = cancel
	if p.work != nil {
		p.work.Begin(time.Now(), profileTaskID, profileTaskID, "Measuring this device",
			"It stops while a chat runs and goes on when the machine is idle.", expected)
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.cancel = nil
		if p.work != nil {
			p.work.End(profileTaskID)
		}
		p.mu.Unlock()
	}()

	args := append([]string{"profile", "--progress", "--threads", strconv.Itoa(p.threads)}, p.extra...)
	if model != "" {
		args = append(args, "--model", model)
	}
	args = append(args, "--stop-on-stdin")
	cmd := p.command(args...)
	var stderr tail
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("profile: start the measurement: %w", err)
	}
	p.log.Info("profile: measuring this device in the background", "why", why, "model", filepath.Base(model), "threads", p.threads, "pid", cmd.Process.Pid)
	// Stopping: closing its stdin (--stop-on-stdin), the one way on every
	// OS (Windows has no SIGTERM), lets the child end at its next step and
	// remove its scratch files; one that has not ended profileStopWait
	// later is killed. Should the agent die, the pipe closes too.
	exited := make(chan struct{})
	stop := context.AfterFunc(mctx, func() {
		_ = in.Close() // closed already only when the child has been waited for
		t := time.NewTimer(orDuration(p.stopWait, profileStopWait))
		defer t.Stop()
		select {
		case <-exited:
		case <-t.C:
			p.log.Warn("profile: the measurement did not stop in time; killing it")
			_ = cmd.Process.Kill() // an error when it has ended already
		}
	})
	defer stop()

	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var s profile.Step
		if json.Unmarshal(sc.Bytes(), &s) != nil || s.Total <= 0 || p.work == nil {
			continue
		}
		title := fmt.Sprintf("Measuring this device (%d/%d)", s.Done, s.Total)
		detail := "Measuring " + s.Phase + " for the ring planner. It stops while a chat runs and goes on when the machine is idle."
		if s.Done >= s.Total {
			detail = "Saving the measurement."
		}
		p.mu.Lock()
		if mctx.Err() == nil {
			p.work.Steps(time.Now(), profileTaskID, profileTaskID, title, detail, int64(s.Done), int64(s.Total))
		}
		p.mu.Unlock()
	}
	err = cmd.Wait()
	close(exited)
	if mctx.Err() != nil && ctx.Err() == nil {
		return errProfileDeferred
	}
	if err != nil {
		return fmt.Errorf("profile: the measurement process ended (%v): %s", err, stderr.last())
	}
	p.log.Info("profile: this device is measured", "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// tail keeps the last line a child wrote to stderr (its error sentence).
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > 4096 {
		t.buf = t.buf[len(t.buf)-4096:]
	}
	return len(b), nil
}

func (t *tail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
