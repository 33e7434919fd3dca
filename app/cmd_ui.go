package app

import (
	"context"
	"errors"
	"fmt"
	"os"

	"homering/app/api/client"
	"homering/app/config"
	"homering/app/window"
)

const uiUsage = `Usage: homering ui [flags]

Opens the chat and device-map window of the running agent (closing it leaves
the agent running).

Flags:
`

// cmdUI is `homering ui`: the chat and device-map window of the running
// agent (app/window). The tray's "Open chat" starts it; closing it leaves
// the agent running.
func cmdUI(ctx context.Context, e env) int {
	fs := newFlags(e, "ui", uiUsage)
	route := fs.String("route", "", "open this page: \"\" the chat, settings, devices")
	browser := fs.Bool("browser", false, "print the address to open in a browser instead of opening a window")
	if exit, ok := parseFlags(fs, e.args); !ok {
		return exit
	}
	dir, err := config.Dir(os.Getenv)
	if err != nil {
		return fail(e.stderr, err)
	}
	if *browser {
		c, err := client.FromDir(dir)
		if err != nil {
			return fail(e.stderr, err)
		}
		fmt.Fprintln(e.stdout, window.EntryURL(c.Info, *route))
		return 0
	}
	return showWindow(ctx, e, dir, *route, false)
}

// showWindow opens the window of dir's running agent at route (or hands
// over to the one already open) and returns the exit status when it
// closes. A build without a window says where to open the chat instead:
// an error for `homering ui`, but not for a second launch of the app
// (again), whose agent runs and which did what it could.
func showWindow(ctx context.Context, e env, dir, route string, again bool) int {
	find := func() (*client.Client, error) { return client.FromDir(dir) }
	c, err := find()
	if err != nil {
		return fail(e.stderr, err)
	}
	err = window.Run(ctx, window.Options{Client: find, Route: route})
	if errors.Is(err, window.ErrNoWindow) {
		if again {
			fmt.Fprintf(e.stderr, "homering: Homering already runs for this user (pid %d); this build has no window: open %s\n", c.Info.PID, window.EntryURL(c.Info, route))
			return 0
		}
		fmt.Fprintf(e.stderr, "homering: %v.\nOpen %s\n", err, window.EntryURL(c.Info, route))
		return 1
	}
	if err != nil {
		return fail(e.stderr, err)
	}
	return 0
}
