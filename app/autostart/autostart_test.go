package autostart

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPlistIsXMLNamingTheBinary(t *testing.T) {
	exe := "/Applications/Homering & Co.app/Contents/MacOS/homering"
	p := Plist(exe)
	var v struct {
		Dict struct {
			Keys    []string `xml:"key"`
			Strings []string `xml:"string"`
			Args    []string `xml:"array>string"`
		} `xml:"dict"`
	}
	if err := xml.Unmarshal(p, &v); err != nil {
		t.Fatalf("not XML: %v\n%s", err, p)
	}
	if len(v.Dict.Args) != 1 || v.Dict.Args[0] != exe {
		t.Errorf("ProgramArguments %q, want [%q]", v.Dict.Args, exe)
	}
	if strings.Join(v.Dict.Keys, ",") != "Label,ProgramArguments,RunAtLoad,ProcessType" || v.Dict.Strings[0] != Label {
		t.Errorf("keys %v, strings %v", v.Dict.Keys, v.Dict.Strings)
	}
}

func TestRegister(t *testing.T) {
	app := "/Applications/Homering.app/Contents/MacOS/homering"
	plist := func(home string) string { return filepath.Join(home, "Library", "LaunchAgents", Label+".plist") }
	for _, tt := range []struct {
		name, goos, exe string
		want            bool
	}{
		{"macOS app", "darwin", app, true},
		{"macOS binary outside a bundle (go run, tests)", "darwin", "/Users/me/src/homering/bin/homering", false},
		{"Linux: the .deb's XDG entry does it", "linux", app, false},
		{"Windows: the installer's Run key does it", "windows", app, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home, cfg := t.TempDir(), filepath.Join(t.TempDir(), "cfg")
			wrote, err := Register(tt.goos, home, cfg, tt.exe)
			if err != nil || wrote != tt.want {
				t.Fatalf("Register = %v, %v; want %v", wrote, err, tt.want)
			}
			b, err := os.ReadFile(plist(home))
			if tt.want != (err == nil) {
				t.Fatalf("plist written %v (%v), want %v", err == nil, err, tt.want)
			}
			if !tt.want {
				return
			}
			if string(b) != string(Plist(app)) {
				t.Errorf("plist:\n%s", b)
			}
			// Removed by the person (or turned off): not written again.
			if err := os.Remove(plist(home)); err != nil {
				t.Fatal(err)
			}
			if wrote, err := Register(tt.goos, home, cfg, tt.exe); wrote || err != nil {
				t.Errorf("second start: Register = %v, %v; want nothing done", wrote, err)
			}
			if _, err := os.Stat(plist(home)); err == nil {
				t.Error("the second start wrote the plist the person removed")
			}
		})
	}
}
