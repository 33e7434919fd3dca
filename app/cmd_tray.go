package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"homering/app/api/client"
	"homering/app/config"
	"homering/app/tray"
)

// cmdTray is `homering` with no command (also `homering tray`): the agent
// with a tray icon. The tray runs on this (the main) goroutine, the agent in
// goroutines; without a tray (no D-Bus session on Linux) the agent runs on
// headless and says so.
func cmdTray(ctx context.Context, e env) int {
	f, ok := parseAgentFlags("tray", e)
	if !ok {
		return 2
	}
	log := f.log
	dir, err := config.Dir(os.Getenv)
	if err != nil {
		return fail(e.stderr, err)
	}
	// One agent per user (per config directory): a second start says so.
	unlock, err := lockAgent(dir)
	if err != nil {
		return fail(e.stderr, err)
	}
	defer unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	agentErr := make(chan error, 1)
	go func() {
		agentErr <- runAgent(ctx, log, f.iface, f.model)
		cancel() // the agent ended: so does the tray
	}()

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
		exe, _ := os.Executable()
		// HOMERING_TRAY_REFRESH (a Go duration) lets tests poll fast enough
		// to see a sub-second chat; people keep the 2 s default.
		refresh, _ := time.ParseDuration(os.Getenv("HOMERING_TRAY_REFRESH"))
		err := tray.Run(ctx, tray.Options{
			RefreshEvery: refresh,
			Client:       func() (*client.Client, error) { return client.FromDir(dir) },
			Open: func(route string) error {
				args := []string{"ui"}
				if route != "" {
					args = append(args, "--route", route)
				}
				cmd := exec.Command(exe, args...)
				cmd.Stdout, cmd.Stderr = e.stderr, e.stderr
				if err := cmd.Start(); err != nil {
					return err
				}
				go func() { // the window lives on its own; closing it leaves the agent running
					err := cmd.Wait()
					log.Info("window process ended", "pid", cmd.Process.Pid, "err", err)
				}()
				return nil
			},
			Quit: cancel,
			Log:  log.With("component", "tray"),
		})
		if err != nil && ctx.Err() == nil {
			log.Warn("the tray stopped; the agent keeps running headless", "err", err)
		}
	}
	if err := <-agentErr; err != nil && !errors.Is(err, context.Canceled) {
		return fail(e.stderr, err)
	}
	return 0
}
