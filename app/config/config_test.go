package config

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"port", func(c *Config) { c.LinkPort = 70000 }, "link_port 70000"},
		{"api not loopback", func(c *Config) { c.APIAddr = "0.0.0.0:8080" }, "api_addr"},
		{"ttl below two rounds", func(c *Config) { c.MDNSTTL = Duration(3 * time.Second) }, "mdns_ttl 3s"},
		{"interval", func(c *Config) { c.BrowseInterval = Duration(time.Millisecond) }, "browse_interval 1ms"},
		{"version", func(c *Config) { c.Version = 2 }, "version is 2"},
		{"manual peer", func(c *Config) { c.ManualPeers = []string{"10.0.0.1"} }, `manual peer "10.0.0.1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.change(&c)
			err := c.Validate()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want ErrInvalid mentioning %q", err, tt.want)
			}
		})
	}
}

func TestLoadSave(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home")
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Default(), c); diff != "" {
		t.Fatalf("missing file (-want +got):\n%s", diff)
	}
	c.Contribute, c.Name, c.ManualPeers = true, "attic", []string{"10.1.2.3:47470"}
	if err := Save(dir, c); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config.json mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	_ = os.WriteFile(filepath.Join(dir, FileName), []byte(`{"mdns_ttl": "six"}`), 0o600)
	if _, err := Load(dir); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad file: %v, want ErrCorrupt", err)
	}
}

func TestDir(t *testing.T) {
	got, err := Dir(func(k string) string {
		if k == EnvHome {
			return "/x/y"
		}
		return ""
	})
	if err != nil || got != "/x/y" {
		t.Errorf("Dir with %s = %q, %v", EnvHome, got, err)
	}
}

// TestDirsPerOS: without HOMERING_HOME the config directory is the OS's
// per-user one (os.UserConfigDir): %AppData%\homering on Windows (Roaming:
// small files that follow the user), $XDG_CONFIG_HOME/homering on Linux,
// ~/Library/Application Support/homering on macOS; caches go to the OS's
// per-user cache (%LocalAppData%, not the roaming profile). Under
// HOMERING_HOME both are inside it.
func TestDirsPerOS(t *testing.T) {
	base := filepath.Join(os.TempDir(), "homering-dir-test") // only a name: nothing is created
	for _, tc := range []struct {
		name                   string
		dir                    func(func(string) string) (string, error)
		winEnv, linuxEnv, macs string // where it is on each OS
		underHome              string
	}{
		{"config", Dir, "AppData", "XDG_CONFIG_HOME", "Application Support", ""},
		{"cache", CacheDir, "LocalAppData", "XDG_CACHE_HOME", "Caches", "cache"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := filepath.Join(base, "homering")
			switch runtime.GOOS {
			case "windows":
				t.Setenv(tc.winEnv, base)
			case "darwin":
				t.Setenv("HOME", base)
				want = filepath.Join(base, "Library", tc.macs, "homering")
			default:
				t.Setenv(tc.linuxEnv, base)
			}
			got, err := tc.dir(func(k string) string {
				if k == EnvHome {
					return ""
				}
				return os.Getenv(k)
			})
			if err != nil || got != want {
				t.Errorf("%s dir = %q, %v; want %q", tc.name, got, err, want)
			}
			home := filepath.Join(base, "home")
			if got, err := tc.dir(func(k string) string { return map[string]string{EnvHome: home}[k] }); err != nil || got != filepath.Join(home, tc.underHome) {
				t.Errorf("%s dir under %s = %q, %v; want %q", tc.name, EnvHome, got, err, filepath.Join(home, tc.underHome))
			}
		})
	}
}
