package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"

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
	if err != nil && ctx.Err() == nil && runtime.GOOS == "windows" {
		// No window on this PC (the WebView2 runtime missing): the chat
		// opens in the default browser, as a person clicking "Open chat"
		// expects something to open. (Elsewhere the desktop build has its
		// webview; a build without one says where to open the chat.)
		url := window.EntryURL(c.Info, route)
		if berr := openBrowser(url); berr == nil {
			fmt.Fprintf(e.stderr, "homering: no window here (%v); opened the chat in the default browser.\n", err)
			return 0
		}
	}
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

// openBrowser opens url in Windows' default browser and returns once the
// opener has started.
func openBrowser(url string) error {
	cmd := exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }() // the opener's own exit says nothing more
	return nil
}
