//go:build desktop

package window

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html"
	"net/http"
	"os"
	"strconv"
	"sync"

	"github.com/wailsapp/wails/v2"
	"github.com/wailsapp/wails/v2/pkg/options"
	"github.com/wailsapp/wails/v2/pkg/options/assetserver"
	wruntime "github.com/wailsapp/wails/v2/pkg/runtime"

	"homering/app/api/apitype"
	"homering/app/api/client"
)

// Built reports whether this build has the Wails window.
const Built = true

// Run opens the window and blocks until it is closed. The webview starts on
// a one-line page that moves to the agent's web UI (same origin as the API,
// so its fetches and server-sent events go straight to the agent).
func Run(ctx context.Context, o Options) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	if _, err := c.Status(ctx); err != nil {
		return err
	}
	target := EntryURL(c.Info, o.Route)
	page := fmt.Sprintf(`<!doctype html><meta charset="utf-8"><title>Homering</title>`+
		`<body style="font:14px sans-serif;background:#111;color:#ddd">Opening Homering…`+
		`<script>location.replace(%q)</script><noscript><a href="%s">Open</a></noscript>`, target, html.EscapeString(target))
	b := &Bridge{c: c}
	// SIGTERM (the tray closing its windows when the agent quits, or a
	// person's kill) cancels ctx: app.go's signal handler took SIGTERM's
	// default action away, and Wails installs its own only once it runs, so
	// a window told to close while it starts up stayed open.
	stop := context.AfterFunc(ctx, b.quit)
	defer stop()
	// One window per agent: a second "Open chat" raises the first.
	sum := sha256.Sum256([]byte(c.Info.URL))
	return wails.Run(&options.App{
		SingleInstanceLock: &options.SingleInstanceLock{
			UniqueId: "io.homering.ui." + hex.EncodeToString(sum[:6]),
			OnSecondInstanceLaunch: func(d options.SecondInstanceData) {
				wruntime.WindowUnminimise(b.ctx)
				wruntime.WindowShow(b.ctx)
				if r := routeArg(d.Args); r != "" {
					wruntime.WindowExecJS(b.ctx, "location.hash = "+strconv.Quote(r))
				}
			},
		},
		Title:     "Homering",
		Width:     1280,
		Height:    820,
		MinWidth:  720,
		MinHeight: 480,
		AssetServer: &assetserver.Options{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(page)) // the webview went away: nobody to tell
		})},
		OnStartup:  b.startup,
		OnDomReady: b.domReady,
		Bind:       []any{b},
	})
}

// Bridge is bound into the webview: one-line forwards to the agent's API.
type Bridge struct {
	c   *client.Client
	ctx context.Context //nolint:containedctx // Wails hands its context to OnStartup; kept only here (STYLE lesson 7)

	mu    sync.Mutex
	ready bool // the page is up: GTK's (or WebView2's) loop runs and takes a quit
}

func (b *Bridge) startup(ctx context.Context) { b.ctx = ctx }

func (b *Bridge) domReady(context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ready = true
}

// quit closes the window. Before its page is up a quit asked of Wails can
// be lost (its loop may not run yet: a CI run kept such a window 20 s and
// more), and a window holds nothing to save, so the process just ends.
func (b *Bridge) quit() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ready {
		wruntime.Quit(b.ctx)
		return
	}
	os.Exit(0)
}

// Status is GET /api/v1/status.
func (b *Bridge) Status() (apitype.Status, error) { return b.c.Status(b.ctx) }

// Peers is GET /api/v1/peers.
func (b *Bridge) Peers() (apitype.Peers, error) { return b.c.Peers(b.ctx) }

// SetContribute is POST /api/v1/contribute.
func (b *Bridge) SetContribute(on bool) (apitype.Status, error) { return b.c.SetContribute(b.ctx, on) }

// StopChat is POST /api/v1/chat/stop.
func (b *Bridge) StopChat(conversationID string) (apitype.ChatStopped, error) {
	return b.c.StopChat(b.ctx, conversationID)
}
