package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"homering/app/api/client"
	"homering/app/config"
	"homering/app/window"
)

// cmdUI is `homering ui`: the chat and device-map window of the running
// agent (app/window). The tray's "Open chat" starts it; closing it leaves
// the agent running.
func cmdUI(ctx context.Context, e env) int {
	fs := flag.NewFlagSet("ui", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	route := fs.String("route", "", "open this page: \"\" the chat, settings, devices")
	browser := fs.Bool("browser", false, "print the address to open in a browser instead of opening a window")
	if err := fs.Parse(e.args); err != nil {
		return 2
	}
	dir, err := config.Dir(os.Getenv)
	if err != nil {
		return fail(e.stderr, err)
	}
	find := func() (*client.Client, error) { return client.FromDir(dir) }
	c, err := find()
	if err != nil {
		return fail(e.stderr, err)
	}
	if *browser {
		fmt.Fprintln(e.stdout, window.EntryURL(c.Info, *route))
		return 0
	}
	err = window.Run(ctx, window.Options{Client: find, Route: *route})
	if errors.Is(err, window.ErrNoWindow) {
		fmt.Fprintf(e.stderr, "homering: %v.\nOpen %s\n", err, window.EntryURL(c.Info, *route))
		return 1
	}
	if err != nil {
		return fail(e.stderr, err)
	}
	return 0
}
