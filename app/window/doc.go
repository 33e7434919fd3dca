// Package window is `homering ui`: the head's chat and device-map window, a
// Wails v2 (v2.15.0) webview showing the agent's own web UI (frontend/, the
// same app a browser gets at the agent's loopback address), so the window and
// the browser never drift apart.
//
// It is a thin client: it imports only app/api/client and app/api/apitype
// (plus Wails). It finds the agent through api.json, opens its web UI with
// the per-run token (traded for a cookie at /?token=…), and binds a Bridge of
// one-line methods over app/api/client for anything native. Closing the
// window ends this process only; the agent keeps contributing.
//
// Build tags: the Wails code needs GTK 3 and WebKitGTK 4.1 (cgo) and builds
// only with `-tags desktop,production,webkit2_41` (build/build-desktop.sh).
// Every other build gets a Run that says how to get a window, so `go build`
// and `go test ./...` need no GTK or WebKit.
package window

import (
	"errors"
	"net/url"

	"homering/app/api/apitype"
	"homering/app/api/client"
)

// ErrNoWindow is Run's answer in builds without the desktop tags.
var ErrNoWindow = errors.New("window: this build of homering has no window; build it with build/build-desktop.sh, or open the chat in a browser (homering ui --browser prints the address)")

// Options say what to open.
type Options struct {
	Client func() (*client.Client, error) // finds the agent; required
	Route  string                         // "" the chat, "settings", "devices"
}

// EntryURL is the address that opens the agent's web UI with its token.
func EntryURL(info apitype.Info, route string) string {
	u := info.URL + "/?token=" + url.QueryEscape(info.Token)
	if route != "" {
		u += "#" + route
	}
	return u
}

// routes are the pages of the web UI a launch may open (its #fragment).
var routes = map[string]bool{"chat": true, "devices": true, "models": true, "settings": true}

// routeArg returns the page named by "--route X" (or "--route=X") in the
// arguments of a second launch, "" when none or unknown: only known names
// reach the page's script.
func routeArg(args []string) string {
	for i, a := range args {
		v, ok := "", false
		switch {
		case (a == "--route" || a == "-route") && i+1 < len(args):
			v, ok = args[i+1], true
		case len(a) > 8 && (a[:8] == "--route="):
			v, ok = a[8:], true
		}
		if ok && routes[v] {
			return v
		}
	}
	return ""
}
