package tray

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"fyne.io/systray"
	"github.com/godbus/dbus/v5"

	"homering/app/api/apitype"
	"homering/app/api/client"
)

// ErrNoTray means this session has no place for a tray icon; the agent runs
// on without one.
var ErrNoTray = errors.New("tray: no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is unset), so no tray icon; the agent keeps running headless")

// Available reports whether a tray icon can be shown. On Linux the tray is a
// D-Bus StatusNotifierItem and needs a session bus that answers (checked
// before systray touches it: v1.12.2 panics at exit without one); elsewhere
// the OS has a tray.
func Available(getenv func(string) string) error {
	if runtime.GOOS != "linux" {
		return nil
	}
	if getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		return ErrNoTray
	}
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return fmt.Errorf("tray: the D-Bus session bus does not answer (%v), so no tray icon; the agent keeps running headless", err)
	}
	return conn.Close()
}

// HostPresent reports whether a tray host (a StatusNotifierWatcher, such as
// a desktop panel) runs on the session bus now. Without one the icon shows
// as soon as a host starts.
func HostPresent() bool {
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return false
	}
	defer conn.Close()
	var has bool
	err = conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, "org.kde.StatusNotifierWatcher").Store(&has)
	return err == nil && has
}

// Options wire the tray to the agent.
type Options struct {
	Client func() (*client.Client, error) // finds the agent; required
	// Open spawns the window on a route ("" chat, "settings"); required.
	Open func(route string) error
	Quit func() // stops the agent; required
	Log  *slog.Logger
	// RefreshEvery is how often the menu re-reads the agent; 0: 2 s.
	RefreshEvery time.Duration
}

// Run shows the tray icon until ctx ends or Quit is clicked. It must run on
// the main goroutine (macOS needs the main thread). A panic inside systray
// (v1.12.2 panics at exit when D-Bus went away) is returned as an error.
func Run(ctx context.Context, o Options) (err error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.RefreshEvery <= 0 {
		o.RefreshEvery = 2 * time.Second
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tray: systray failed: %v", r)
		}
	}()
	t := &tray{o: o, items: map[string]*systray.MenuItem{}, icons: map[iconKind][]byte{}}
	for _, k := range []iconKind{iconOff, iconContributing, iconBusy} {
		t.icons[k] = trayIcon(k)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	systray.Run(func() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.loop(ctx, done)
		}()
	}, func() { close(done) })
	wg.Wait()
	return nil
}

type tray struct {
	o     Options
	items map[string]*systray.MenuItem // by menu ID; created once
	icons map[iconKind][]byte
	last  View
	icon  iconKind
}

// loop builds the menu, then applies clicks and refreshes until ctx ends,
// Quit is clicked or systray exits (done).
func (t *tray) loop(ctx context.Context, done <-chan struct{}) {
	v := t.fetch(ctx)
	systray.SetTitle("Homering")
	t.icon = iconFor(v)
	systray.SetIcon(t.icons[t.icon])
	systray.SetTooltip(tooltip(v))
	clicks := make(chan string, 8)
	for _, it := range menuModel(v) {
		var mi *systray.MenuItem
		if it.Checkbox {
			mi = systray.AddMenuItemCheckbox(it.Title, it.Tooltip, it.Checked)
		} else {
			mi = systray.AddMenuItem(it.Title, it.Tooltip)
		}
		if it.Disabled {
			mi.Disable()
		}
		if it.SepAfter {
			systray.AddSeparator()
		}
		t.items[it.ID] = mi
		go func(id string, ch <-chan struct{}) {
			for {
				select {
				case <-ch:
					clicks <- id
				case <-done:
					return
				}
			}
		}(it.ID, mi.ClickedCh)
	}
	t.last = v
	t.o.Log.Info("tray ready", "status", statusLine(v), "icon", t.icon)

	tick := time.NewTicker(t.o.RefreshEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			systray.Quit()
			<-done
			return
		case <-done:
			return
		case <-tick.C:
			t.apply(t.fetch(ctx))
		case id := <-clicks:
			t.click(ctx, id)
		}
	}
}

func (t *tray) click(ctx context.Context, id string) {
	t.o.Log.Info("tray click", "item", id)
	switch id {
	case idContribute:
		v := t.last
		v.Pending = true
		t.apply(v)
		if c, err := t.o.Client(); err == nil {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err = c.SetContribute(cctx, !t.last.Status.Contribute)
			cancel()
			if err != nil {
				t.o.Log.Error("tray: contribute", "err", err)
			}
		}
	case idOpen:
		if err := t.o.Open(""); err != nil {
			t.o.Log.Error("tray: open chat", "err", err)
		}
	case idSettings:
		if err := t.o.Open("settings"); err != nil {
			t.o.Log.Error("tray: open settings", "err", err)
		}
	case idQuit:
		t.o.Quit()
		systray.Quit()
		return
	}
	t.apply(t.fetch(ctx))
}

// fetch asks the agent for everything the menu shows.
func (t *tray) fetch(ctx context.Context) View {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := t.o.Client()
	if err != nil {
		return View{Err: "the agent is not running"}
	}
	var v View
	if v.Status, err = c.Status(ctx); err != nil {
		return View{Err: "the agent does not answer"}
	}
	if v.Peers, err = c.Peers(ctx); err != nil {
		v.NoPeers = true
	}
	v.Active, _ = c.ChatActive(ctx)
	return v
}

// apply updates the items whose look changed.
func (t *tray) apply(v View) {
	old := map[string]menuItem{}
	for _, it := range menuModel(t.last) {
		old[it.ID] = it
	}
	for _, it := range menuModel(v) {
		mi := t.items[it.ID]
		o := old[it.ID]
		if mi == nil || o == it {
			continue
		}
		if o.Title != it.Title {
			mi.SetTitle(it.Title)
		}
		if o.Checked != it.Checked {
			if it.Checked {
				mi.Check()
			} else {
				mi.Uncheck()
			}
		}
		if o.Disabled != it.Disabled {
			if it.Disabled {
				mi.Disable()
			} else {
				mi.Enable()
			}
		}
	}
	if k := iconFor(v); k != t.icon {
		t.icon = k
		systray.SetIcon(t.icons[k])
		t.o.Log.Info("tray icon", "state", k.String())
	}
	if tooltip(v) != tooltip(t.last) {
		systray.SetTooltip(tooltip(v))
	}
	t.last = v
}

// statusOf is for tests: the view of a status alone.
func statusOf(st apitype.Status) View { return View{Status: st} }
