// Package tray is the agent's tray icon and menu (fyne.io/systray), a thin
// client of the agent's loopback API: it imports only app/api/client and
// app/api/apitype (tray_test.go checks that).
//
// Model. The menu is a pure function of what the API reports, menuModel(View)
// []menuItem, with a fixed list of item IDs in a fixed order, so the tray
// creates the items once and only updates their titles, check marks and
// enabled state (no flicker, no menu rebuild while it is open):
//
//	contribute   checkbox "Contribute"              ↔ POST /api/v1/contribute (persists in config)
//	open         "Open chat"                        → spawns `homering ui`
//	status       disabled line: "Idle", "Generating…", "Contributing, waiting for a head", a problem's title
//	devices      disabled line: "1 device" / "3 devices (2 paired)"
//	settings     "Settings…"                         → spawns `homering ui --route settings`
//	quit         "Quit Homering"                    → stops the agent
//
// The icon (iconFor) has three states: off (grey ring), contributing (green
// ring) and busy (amber ring with a dot: a generation runs). The PNGs are
// drawn in Go (icons.go), no image files.
//
// The tray refreshes from GET /api/v1/status, /peers and /chat/active every
// RefreshEvery and right after each click.
//
// Linux: systray talks D-Bus (StatusNotifierItem). Without a session bus
// fyne.io/systray v1.12.2 panics at exit, so Available checks
// DBUS_SESSION_BUS_ADDRESS first and Run recovers; without a tray host
// (no org.kde.StatusNotifierWatcher) the item registers when one appears.
package tray
