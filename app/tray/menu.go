package tray

import (
	"fmt"
	"strings"

	"homering/app/api/apitype"
)

// View is what the tray shows: the agent's answers, gathered in one place.
type View struct {
	Status apitype.Status
	Peers  apitype.Peers
	// NoPeers: the agent answered its status but not its peers, so the
	// devices line cannot count them.
	NoPeers bool
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
	case v.Status.Serving != nil:
		return servingLine(*v.Status.Serving)
	case v.Status.Contribute:
		return "Contributing, idle"
	}
	return "Idle, not contributing"
}

// servingLine says whose chat this device serves, its layers and memory:
// "Serving Kitchen's chat: layers 11-19, 24 MB".
func servingLine(s apitype.ServingJob) string {
	who := s.HeadName
	if who == "" {
		who = s.HeadID.Short()
	}
	verb := "Serving"
	if s.Idle {
		verb = "Holding" // the head keeps the job between its requests
	}
	if len(s.Layers) == 0 {
		return fmt.Sprintf("%s %s's chat: getting its layers ready", verb, who)
	}
	var ls []string
	for _, w := range s.Layers {
		if w.End-w.Start == 1 {
			ls = append(ls, fmt.Sprint(w.Start))
			continue
		}
		ls = append(ls, fmt.Sprintf("%d-%d", w.Start, w.End-1))
	}
	return fmt.Sprintf("%s %s's chat: layers %s, %s", verb, who, strings.Join(ls, ", "), megabytes(s.MemoryBytes))
}

// megabytes is n for a person: "24 MB", "1.5 GB" (binary units, as the
// window shows them).
func megabytes(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d MB", (n+1<<19)>>20)
}

// devicesLine counts the devices online (this one and the peers it can
// see, the head it serves included: app/agent marks it seen), the paired
// ones online out of all paired, and those contributing (this one too).
func devicesLine(v View) string {
	if v.Err != "" || v.NoPeers {
		return "Devices: unknown"
	}
	seen, pairedOn, paired, contributing := 1, 0, 0, 0
	if v.Status.Contribute {
		contributing++
	}
	for _, p := range v.Peers.Peers {
		if p.Paired {
			paired++
		}
		if !p.Visible {
			continue
		}
		seen++
		if p.Paired {
			pairedOn++
			if p.Contribute {
				contributing++
			}
		}
	}
	switch {
	case seen == 1 && paired == 0:
		return "1 device (this one)"
	case seen == 1:
		return fmt.Sprintf("This device only; %d paired offline", paired)
	}
	return fmt.Sprintf("%d devices online (%d of %d paired, %d contributing)", seen, pairedOn, paired, contributing)
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
	case v.Active.Running > 0, v.Status.Serving != nil:
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
