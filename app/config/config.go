package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// FileName is the config file inside Dir.
const FileName = "config.json"

// EnvHome overrides the config directory (tests, portable installs).
const EnvHome = "HOMERING_HOME"

// Sentinels.
var (
	ErrInvalid = errors.New("config: invalid settings")
	ErrCorrupt = errors.New("config: config.json cannot be read")
)

// Config is every setting of a device.
type Config struct {
	Version        int      `json:"version"`
	Name           string   `json:"name"`
	Contribute     bool     `json:"contribute"`
	LinkPort       int      `json:"link_port"`
	Interface      string   `json:"interface"`
	MDNSTTL        Duration `json:"mdns_ttl"`
	BrowseInterval Duration `json:"browse_interval"`
	APIAddr        string   `json:"api_addr"`
	ManualPeers    []string `json:"manual_peers"`
}

// Default returns the settings of a fresh install.
func Default() Config {
	return Config{
		Version: 1,
		// Empty means the OS host name, read at start, so a renamed machine
		// is shown with its new name.
		Name: "",
		// Off: a fresh install listens on nothing but loopback until its
		// owner decides to share this machine.
		Contribute: false,
		// The link (transport) port while contributing. Fixed rather than
		// random so a manual "add by address" and firewall rules stay valid
		// across restarts; 47470 is unassigned by IANA. 0 picks a free port
		// at each start (tests; mDNS still advertises the real one).
		LinkPort: 47470,
		// Empty: every suitable interface (not loopback, not container or VM
		// bridges, up, multicast). Set a name to use only that one.
		Interface: "",
		// TTL of our mDNS records: a device killed without a goodbye vanishes
		// from the others' lists within this. 6 s is three browse rounds, so
		// two lost answers in a row on Wi-Fi do not make a device flicker,
		// while a dead device is gone before a person wonders why. (RFC 6762
		// suggests 75 min for service records; it assumes no faster liveness.)
		MDNSTTL: Duration(6 * time.Second),
		// How often a fresh mDNS query goes out. Each device sends one query
		// per interval and answers everyone else's: N devices cost N²/2 small
		// packets per second, nothing for a home network.
		BrowseInterval: Duration(2 * time.Second),
		// The control API for the CLI, tray and window. Loopback only, and a
		// random port so two users on one machine never collide; the actual
		// address and a per-run token go to api.json.
		APIAddr: "127.0.0.1:0",
		// Devices added by address because multicast does not reach them.
		ManualPeers: nil,
	}
}

// Validate reports every wrong field, one sentence each.
func (c Config) Validate() error {
	var errs []string
	if c.Version != 1 {
		errs = append(errs, fmt.Sprintf("version is %d, but this build reads version 1; install the newer Homering that wrote it.", c.Version))
	}
	if len(c.Name) > 63 {
		errs = append(errs, "name is longer than 63 bytes; choose a shorter one.")
	}
	if c.LinkPort < 0 || c.LinkPort > 65535 {
		errs = append(errs, fmt.Sprintf("link_port %d is not a TCP port; use 1-65535 (default 47470), or 0 for any free port.", c.LinkPort))
	}
	if c.BrowseInterval.D() < 100*time.Millisecond || c.BrowseInterval.D() > time.Minute {
		errs = append(errs, fmt.Sprintf("browse_interval %s is outside 100ms-1m; use 2s.", c.BrowseInterval))
	}
	if c.MDNSTTL.D() < 2*c.BrowseInterval.D() || c.MDNSTTL.D() > 2*time.Hour {
		errs = append(errs, fmt.Sprintf("mdns_ttl %s must be at least twice browse_interval (%s) and at most 2h, or devices flicker; use 6s.", c.MDNSTTL, c.BrowseInterval))
	}
	if ap, err := netip.ParseAddrPort(c.APIAddr); err != nil || !ap.Addr().IsLoopback() {
		errs = append(errs, fmt.Sprintf("api_addr %q must be a loopback address with a port, like 127.0.0.1:0; the control API never leaves this machine.", c.APIAddr))
	}
	for _, p := range c.ManualPeers {
		if _, _, err := splitHostPort(p); err != nil {
			errs = append(errs, fmt.Sprintf("manual peer %q is not host:port; remove it or fix it.", p))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(errs, " "))
	}
	return nil
}

func splitHostPort(s string) (string, string, error) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 || i == len(s)-1 {
		return "", "", fmt.Errorf("%q: missing port", s)
	}
	return s[:i], s[i+1:], nil
}

// Dir returns the config directory (see the package doc). getenv is os.Getenv
// in production.
func Dir(getenv func(string) string) (string, error) {
	if d := getenv(EnvHome); d != "" {
		return d, nil
	}
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("config: find the user config directory (set %s): %w", EnvHome, err)
	}
	return filepath.Join(base, "homering"), nil
}

// CacheDir returns the directory for what can be fetched again (the weight
// slices a worker was sent): under HOMERING_HOME its cache folder, else the
// OS's per-user cache (~/.cache/homering, %LocalAppData%\homering,
// ~/Library/Caches/homering). Not the config directory: on Windows that
// roams with the profile, and gigabytes of weights must not.
func CacheDir(getenv func(string) string) (string, error) {
	if d := getenv(EnvHome); d != "" {
		return filepath.Join(d, "cache"), nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("config: find the user cache directory (set %s): %w", EnvHome, err)
	}
	return filepath.Join(base, "homering"), nil
}

// Load reads dir/config.json over Default(); a missing file is Default().
func Load(dir string) (Config, error) {
	c := Default()
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("config: read: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return Config{}, fmt.Errorf("%s: %w: %v; fix it or delete it to start from defaults", filepath.Join(dir, FileName), ErrCorrupt, err)
	}
	return c, c.Validate()
}

// Save validates c and writes dir/config.json atomically, mode 0600.
func Save(dir string, c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("config: create %s: %w", dir, err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("config: encode: %w", err)
	}
	return WriteFile(filepath.Join(dir, FileName), append(b, '\n'))
}

// WriteFile writes a 0600 file atomically (temp file and rename).
func WriteFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("config: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	// A failed chmod, write or close leaves the old file in place: the
	// error of each step is the one checked (a shadowed err here once let a
	// failed write go on to the rename).
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Close()
	} else {
		_ = tmp.Close()
	}
	if err != nil {
		return fmt.Errorf("config: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("config: write %s: %w", path, err)
	}
	return nil
}

// Duration is a time.Duration written as text ("6s") in JSON.
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes "6s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads Go duration syntax.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("config: duration %q: %w", b, err)
	}
	*d = Duration(v)
	return nil
}
