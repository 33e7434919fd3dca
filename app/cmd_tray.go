package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"homering/app/api/client"
	"homering/app/autostart"
	"homering/app/config"
	"homering/app/tray"
	"homering/discovery/identity"
)

// cmdTray is `homering` with no command (also `homering tray`): the agent
// with a tray icon. The tray runs on this (the main) goroutine, the agent in
// goroutines; without a tray (no D-Bus session on Linux) the agent runs on
// headless and says so.
func cmdTray(ctx context.Context, e env) int {
	dir, err := config.Dir(os.Getenv)
	if err != nil {
		return fail(e.stderr, err)
	}
	// A GUI build (Windows' -H windowsgui) or a launcher may give no
	// stderr: the log goes to a file in the config directory.
	if f, ok := e.stderr.(*os.File); ok && !usableStderr(f) {
		lf, err := openAgentLog(dir)
		if err != nil {
			return 1 // nowhere to say it
		}
		defer lf.Close()
		e.stderr = lf
	}
	f, exit, ok := parseAgentFlags("tray", e)
	if !ok {
		return exit
	}
	log := f.log
	// One agent per user (per config directory). A second launch opens the
	// running agent's window and exits; the lock's holder may still be
	// starting, so it is given agentStartWait to answer.
	unlock, lockErr := lockAgent(dir)
	if lockErr != nil && !errors.Is(lockErr, errAgentLocked) {
		return fail(e.stderr, lockErr)
	}
	wait := time.Duration(0)
	if lockErr != nil {
		wait = agentStartWait
	}
	if c, ok := runningAgent(ctx, dir, wait); ok {
		if lockErr == nil {
			unlock()
		}
		log.Info("an agent already runs for this user: opening its window", "pid", c.Info.PID, "config", dir)
		return showWindow(ctx, e, dir, "", true)
	}
	if lockErr != nil {
		return fail(e.stderr, lockErr)
	}
	defer unlock()
	// Start at login where no installer sets it up (macOS), once.
	if home, err := os.UserHomeDir(); err == nil {
		exe, _ := os.Executable()
		if wrote, err := autostart.Register(runtime.GOOS, home, dir, exe); err != nil {
			log.Warn("start at login could not be set up", "err", err)
		} else if wrote {
			log.Info("start at login: LaunchAgent written", "label", autostart.Label)
		}
	}

	// The first launch for this user (no identity yet: the agent is about
	// to create it) opens the window by itself, with its welcome; later
	// launches start in the tray, as at login.
	_, keyErr := os.Stat(filepath.Join(dir, identity.KeyFile))
	first := errors.Is(keyErr, fs.ErrNotExist)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var windows windowProcs
	agentErr := make(chan error, 1)
	go func() {
		agentErr <- runAgent(ctx, f)
		cancel() // the agent ended: so does the tray
	}()
	exe, _ := os.Executable()
	open := func(route string) error {
		args := []string{"ui"}
		if route != "" {
			args = append(args, "--route", route)
		}
		cmd := exec.Command(exe, args...)
		cmd.Stdout, cmd.Stderr = e.stderr, e.stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		windows.add(cmd.Process)
		go func() { // the window lives on its own; closing it leaves the agent running
			err := cmd.Wait()
			windows.remove(cmd.Process)
			log.Info("window process ended", "pid", cmd.Process.Pid, "err", err)
		}()
		return nil
	}
	if first {
		go func() {
			if _, ok := runningAgent(ctx, dir, firstWindowWait); !ok {
				return // the agent did not come up: its error is the launch's
			}
			log.Info("first launch: opening the window")
			if err := open(""); err != nil {
				log.Warn("first launch: the window could not be opened", "err", err)
			}
		}()
	}

	if err := tray.Available(os.Getenv); err != nil {
		log.Warn("no tray icon; running headless", "why", err.Error())
		fmt.Fprintf(e.stderr, "homering: %v.\n", err)
	} else {
		if !tray.HostPresent() {
			log.Warn("no tray host (StatusNotifierWatcher) on the session bus yet; the icon appears when one starts, the agent runs meanwhile")
		}
		if on, known := onMainThread(); known {
			// The desktop test checks this: macOS aborts a tray started
			// off the main thread, and Linux would hide the same mistake.
			log.Info("tray starting", "main_thread", on)
		}
		// HOMERING_TRAY_REFRESH (a Go duration) lets tests poll fast enough
		// to see a sub-second chat; people keep the 2 s default.
		refresh, _ := time.ParseDuration(os.Getenv("HOMERING_TRAY_REFRESH"))
		err := tray.Run(ctx, tray.Options{
			RefreshEvery: refresh,
			Client:       func() (*client.Client, error) { return client.FromDir(dir) },
			Open:         open,
			Quit:         cancel,
			Log:          log.With("component", "tray"),
		})
		if err != nil && ctx.Err() == nil {
			log.Warn("the tray stopped; the agent keeps running headless", "err", err)
		}
	}
	err = <-agentErr
	windows.close(log) // Quit, or the agent ended: its windows go with it
	if err != nil && !errors.Is(err, context.Canceled) {
		return fail(e.stderr, err)
	}
	return 0
}

// firstWindowWait is how long the first launch waits for its agent to
// answer before it opens the window (the agent creates its identity and
// may profile the device first).
const firstWindowWait = time.Minute

// windowProcs are the window processes the tray opened and that still run.
type windowProcs struct {
	mu    sync.Mutex
	procs map[*os.Process]bool
}

func (w *windowProcs) add(p *os.Process) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.procs == nil {
		w.procs = map[*os.Process]bool{}
	}
	w.procs[p] = true
}

func (w *windowProcs) remove(p *os.Process) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.procs, p)
}

// close ends every window still open: SIGTERM, which a window takes as its
// close button; Windows has no SIGTERM for another process, so there it is
// ended (its WebView2 processes end with it).
func (w *windowProcs) close(log *slog.Logger) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for p := range w.procs {
		var err error
		if runtime.GOOS == "windows" {
			err = p.Kill()
		} else {
			err = p.Signal(syscall.SIGTERM)
		}
		log.Info("closing a window: the agent quits", "pid", p.Pid, "err", err)
	}
}

// errAgentLocked is lockAgent's error when another process holds the lock.
var errAgentLocked = errors.New("Homering already runs for this user; use its tray icon, or stop it first") //nolint:staticcheck // ST1005: a sentence for people that starts with a name

// agentStartWait is how long a second launch waits for the agent holding
// the lock to answer (it may have just started) before giving up.
const agentStartWait = 15 * time.Second

// runningAgent finds the agent of dir that answers its API, asking again
// until wait has passed (0: once).
func runningAgent(ctx context.Context, dir string, wait time.Duration) (*client.Client, bool) {
	deadline := time.Now().Add(wait)
	for {
		if c, err := client.FromDir(dir); err == nil {
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := c.Status(sctx)
			cancel()
			if err == nil {
				return c, true
			}
		}
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			return nil, false
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// agentLogMax is the size at which the agent's log file starts anew (the
// last one kept as agent.log.old).
const agentLogMax = 8 << 20

// usableStderr reports whether f can take the log: it exists and stats (a
// Windows GUI process has no standard handles, or a null one), and, off
// Windows, is not the null device (where Go's runtime points a closed fd 2
// on Unix, and where some launchers send it). Windows' NUL has no file ID
// for os.SameFile to compare: a pipe would match it.
func usableStderr(f *os.File) bool {
	if f == nil {
		return false
	}
	st, err := f.Stat()
	if err != nil {
		return false
	}
	if runtime.GOOS == "windows" {
		return true
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(st, null)
}

// openAgentLog opens agent.log in the config directory for appending, after
// moving one grown past agentLogMax to agent.log.old.
func openAgentLog(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	name := filepath.Join(dir, "agent.log")
	if st, err := os.Stat(name); err == nil && st.Size() > agentLogMax {
		_ = os.Rename(name, name+".old") // if it fails, the log grows on
	}
	return os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
}
