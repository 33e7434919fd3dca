package tray

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"homering/app/api/apitype"
	"homering/discovery/deviceid"
)

func TestMenuModel(t *testing.T) {
	contributing := statusOf(apitype.Status{Contribute: true})
	busy := View{Status: apitype.Status{}, Active: apitype.ChatActive{Running: 1, Models: []apitype.ServedModel{{Name: "stories260K"}}}}
	problem := statusOf(apitype.Status{Problems: []apitype.Problem{{Title: "Port 47470 is taken"}}})
	warnFirst := statusOf(apitype.Status{Problems: []apitype.Problem{{Title: "Cannot advertise.", Severity: "warning"}, {Title: "Cannot accept connections.", Severity: "error"}}})
	warnOnly := statusOf(apitype.Status{Problems: []apitype.Problem{{Title: "Cannot advertise.", Severity: "warning"}}})
	peers := View{Status: apitype.Status{Contribute: true}, Peers: apitype.Peers{Peers: []apitype.Peer{
		{Visible: true, Paired: true, Contribute: true}, {Visible: true, Paired: true}, {Visible: true}, {Visible: false, Paired: true},
	}}}
	// Paired devices all offline, this one not contributing.
	alone := View{Peers: apitype.Peers{Peers: []apitype.Peer{{Paired: true, Contribute: true}, {Paired: true}}}}
	kitchen := deviceid.ForName("kitchen")
	job := apitype.ServingJob{HeadID: kitchen, HeadName: "Kitchen", Layers: []apitype.Window{{Start: 11, End: 20}}, MemoryBytes: 24 << 20}
	serving := View{Status: apitype.Status{Contribute: true, Serving: &job}, Peers: apitype.Peers{Peers: []apitype.Peer{{ID: kitchen, Name: "Kitchen", Paired: true, Visible: true}}}}
	held := job
	held.Idle, held.HeadName, held.MemoryBytes = true, "", 3<<29
	held.Layers = []apitype.Window{{Start: 0, End: 4}, {Start: 8, End: 9}}
	holding := statusOf(apitype.Status{Contribute: true, Serving: &held})
	starting := statusOf(apitype.Status{Contribute: true, Serving: &apitype.ServingJob{HeadID: kitchen, HeadName: "Kitchen", Layers: []apitype.Window{}}})
	for _, tc := range []struct {
		name       string
		v          View
		contribute bool
		status     string
		devices    string
		icon       iconKind
		disabled   []string
	}{
		{"fresh install", View{}, false, "Idle, not contributing", "1 device (this one)", iconOff, []string{idStatus, idDevices}},
		{"contributing", contributing, true, "Contributing, idle", "1 device (this one)", iconContributing, []string{idStatus, idDevices}},
		{"generating", busy, false, "Head: generating with stories260K", "1 device (this one)", iconBusy, []string{idStatus, idDevices}},
		{"problem first", problem, false, "Problem: Port 47470 is taken", "1 device (this one)", iconOff, []string{idStatus, idDevices}},
		{"an error before a warning", warnFirst, false, "Problem: Cannot accept connections.", "1 device (this one)", iconOff, []string{idStatus, idDevices}},
		{"a warning alone", warnOnly, false, "Warning: Cannot advertise.", "1 device (this one)", iconOff, []string{idStatus, idDevices}},
		{"peers counted when visible", peers, true, "Contributing, idle", "4 devices online (2 of 3 paired, 2 contributing)", iconContributing, []string{idStatus, idDevices}},
		{"paired devices offline", alone, false, "Idle, not contributing", "This device only; 2 paired offline", iconOff, []string{idStatus, idDevices}},
		{"peers unknown", View{NoPeers: true}, false, "Idle, not contributing", "Devices: unknown", iconOff, []string{idStatus, idDevices}},
		{"serving another head", serving, true, "Serving Kitchen's chat: layers 11-19, 24 MB", "2 devices online (1 of 1 paired, 1 contributing)", iconBusy, []string{idStatus, idDevices}},
		{"holding an idle job", holding, true, "Holding " + kitchen.Short() + "'s chat: layers 0-3, 8, 1.5 GB", "1 device (this one)", iconBusy, []string{idStatus, idDevices}},
		{"a job before its plan", starting, true, "Serving Kitchen's chat: getting its layers ready", "1 device (this one)", iconBusy, []string{idStatus, idDevices}},
		{"agent gone", View{Err: "the agent is not running"}, false, "Not running: the agent is not running", "Devices: unknown", iconOff,
			[]string{idContribute, idOpen, idStatus, idDevices, idSettings}},
		{"click pending", View{Pending: true}, false, "Idle, not contributing", "1 device (this one)", iconOff, []string{idContribute, idStatus, idDevices}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := menuModel(tc.v)
			var ids, disabled []string
			byID := map[string]menuItem{}
			for _, it := range m {
				ids = append(ids, it.ID)
				byID[it.ID] = it
				if it.Disabled {
					disabled = append(disabled, it.ID)
				}
			}
			if diff := cmp.Diff([]string{idContribute, idOpen, idStatus, idDevices, idSettings, idQuit}, ids); diff != "" {
				t.Errorf("item order (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.disabled, disabled); diff != "" {
				t.Errorf("disabled items (-want +got):\n%s", diff)
			}
			if got := byID[idContribute]; !got.Checkbox || got.Checked != tc.contribute {
				t.Errorf("contribute item %+v, want checked=%v", got, tc.contribute)
			}
			if got := byID[idStatus].Title; got != tc.status {
				t.Errorf("status line %q, want %q", got, tc.status)
			}
			if got := byID[idDevices].Title; got != tc.devices {
				t.Errorf("devices line %q, want %q", got, tc.devices)
			}
			if got := iconFor(tc.v); got != tc.icon {
				t.Errorf("icon %v, want %v", got, tc.icon)
			}
		})
	}
}

func TestIconsDifferAndDecode(t *testing.T) {
	seen := map[string]iconKind{}
	for _, k := range []iconKind{iconOff, iconContributing, iconBusy} {
		b := iconPNG(k)
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%v: %v", k, err)
		}
		if r := img.Bounds(); r.Dx() != 32 || r.Dy() != 32 {
			t.Errorf("%v: %v, want 32x32", k, r)
		}
		if _, _, _, a := img.At(16, 2).RGBA(); a == 0 {
			t.Errorf("%v: the ring is not drawn at (16,2)", k)
		}
		_, _, _, centre := img.At(16, 16).RGBA()
		if (centre != 0) != (k == iconBusy) {
			t.Errorf("%v: centre alpha %d; only busy has a dot", k, centre)
		}
		if other, dup := seen[string(b)]; dup {
			t.Errorf("%v and %v have the same icon", k, other)
		}
		seen[string(b)] = k
	}
}

func TestAvailable(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	err := Available(env(nil))
	if (err != nil) != (isLinux()) {
		t.Errorf("Available without a session bus = %v", err)
	}
	if isLinux() {
		// A bus address that leads nowhere is caught before systray sees it.
		t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
		if err := Available(env(map[string]string{"DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"})); err == nil {
			t.Errorf("Available with a dead bus address: nil, want an error")
		}
	}
}

// TestImportsOnlyTheClient keeps the tray a thin client: of this module it
// may import app/api/client and app/api/apitype only.
func TestImportsOnlyTheClient(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Imports []string }
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	for _, imp := range p.Imports {
		if strings.HasPrefix(imp, "homering/") && imp != "homering/app/api/client" && imp != "homering/app/api/apitype" {
			t.Errorf("app/tray imports %s; the tray talks to the agent only through app/api/client", imp)
		}
	}
}
