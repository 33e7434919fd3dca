package window

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"homering/app/api/apitype"
)

func TestEntryURL(t *testing.T) {
	info := apitype.Info{URL: "http://127.0.0.1:4000", Token: "a b&c"}
	for _, tc := range []struct{ route, want string }{
		{"", "http://127.0.0.1:4000/?token=a+b%26c"},
		{"settings", "http://127.0.0.1:4000/?token=a+b%26c#settings"},
	} {
		if got := EntryURL(info, tc.route); got != tc.want {
			t.Errorf("EntryURL(%q) = %q, want %q", tc.route, got, tc.want)
		}
	}
}

// TestImportsOnlyTheClient keeps the window a thin client, in both builds.
func TestImportsOnlyTheClient(t *testing.T) {
	for _, tags := range []string{"", "desktop,production,webkit2_41"} {
		out, err := exec.Command("go", "list", "-tags", tags, "-json", ".").Output()
		if err != nil {
			t.Fatal(err)
		}
		var p struct{ Imports []string }
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatal(err)
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, "homering/") && imp != "homering/app/api/client" && imp != "homering/app/api/apitype" {
				t.Errorf("tags %q: app/window imports %s; it talks to the agent only through app/api/client", tags, imp)
			}
		}
	}
}

func TestRouteArg(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"none", []string{"ui"}, ""},
		{"separate value", []string{"ui", "--route", "settings"}, "settings"},
		{"joined value", []string{"ui", "--route=devices"}, "devices"},
		{"unknown page", []string{"ui", "--route", "x');alert(1)//"}, ""},
		{"flag without value", []string{"ui", "--route"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := routeArg(tc.args); got != tc.want {
				t.Errorf("routeArg(%q) = %q, want %q", tc.args, got, tc.want)
			}
		})
	}
}
