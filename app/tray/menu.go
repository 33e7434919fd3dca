package tray

import (
	"fmt"

	"homering/app/api/apitype"
)

// View is what the tray shows: the agent's answers, gathered in one place.
type View struct {
	Status  apitype.Status
	Peers   apitype.Peers
	Active  apitype.ChatActive
	Err     string // the agent cannot be reached: why
	Pending bool   // a click is being applied
}

// Item IDs, in menu order.
const (
	idContribute = "contribute"
	idOpen       = "open"
	idStatus     = "status"
	idDevices    = "devices"
	idSettings   = "settings"
	idQuit       = "quit"
)

type menuItem struct {
	ID       string
	Title    string
	Tooltip  string
	Checkbox bool
	Checked  bool
	Disabled bool
	SepAfter bool // a separator follows
}

// menuModel is the menu for v. It always returns the same IDs in the same
// order.
func menuModel(v View) []menuItem {
	reachable := v.Err == ""
	return []menuItem{
		{ID: idContribute, Title: "Contribute", Checkbox: true, Checked: v.Status.Contribute, Disabled: !reachable || v.Pending,
			Tooltip: "Share this machine's CPU, GPU and memory with your paired devices"},
		{ID: idOpen, Title: "Open chat", Disabled: !reachable, Tooltip: "Chat on this machine, using every contributing device"},
		{ID: idStatus, Title: statusLine(v), Disabled: true},
		{ID: idDevices, Title: devicesLine(v), Disabled: true, SepAfter: true},
		{ID: idSettings, Title: "Settings…", Disabled: !reachable},
		{ID: idQuit, Title: "Quit Homering", Tooltip: "Stop contributing and close the agent"},
	}
}

func statusLine(v View) string {
	switch {
	case v.Err != "":
		return "Not running: " + v.Err
	case len(v.Status.Problems) > 0:
		// Errors (app/problem's severity) before warnings.
		p := v.Status.Problems[0]
		for _, q := range v.Status.Problems {
			if q.Severity == "error" {
				p = q
				break
			}
		}
		if p.Severity == "warning" {
			return "Warning: " + p.Title
		}
		return "Problem: " + p.Title
	case v.Active.Running > 0:
		if len(v.Active.Models) > 0 {
			return "Head: generating with " + v.Active.Models[0].Name
		}
		return "Head: generating"
	case v.Status.Contribute:
		return "Contributing, idle"
	}
	return "Idle, not contributing"
}

// devicesLine counts this device and the peers it can see.
func devicesLine(v View) string {
	if v.Err != "" {
		return "Devices: unknown"
	}
	seen, paired, contributing := 1, 0, 0
	for _, p := range v.Peers.Peers {
		if !p.Visible {
			continue
		}
		seen++
		if p.Paired {
			paired++
			if p.Contribute {
				contributing++
			}
		}
	}
	if seen == 1 {
		return "1 device (this one)"
	}
	return fmt.Sprintf("%d devices (%d paired, %d contributing)", seen, paired, contributing)
}

// icon states.
type iconKind int

const (
	iconOff iconKind = iota
	iconContributing
	iconBusy
)

func (k iconKind) String() string {
	return [...]string{"off", "contributing", "busy"}[k]
}

// iconFor picks the icon for v.
func iconFor(v View) iconKind {
	switch {
	case v.Err != "":
		return iconOff
	case v.Active.Running > 0:
		return iconBusy
	case v.Status.Contribute:
		return iconContributing
	}
	return iconOff
}

// tooltip is the hover text.
func tooltip(v View) string {
	return "Homering: " + statusLine(v)
}
