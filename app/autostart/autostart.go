package autostart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Label is the LaunchAgent's label and file name (without .plist), the
// same as the plist build/macos-app.sh puts in the bundle.
const Label = "com.homering.agent"

// doneFile, in the config directory, records that Register wrote the
// LaunchAgent once: a person who removed it (or turned it off in Login
// Items) is not overruled at the next start.
const doneFile = "autostart-registered"

// Plist is the LaunchAgent that starts exe at login.
func Plist(exe string) []byte {
	var esc bytes.Buffer
	_ = xml.EscapeText(&esc, []byte(exe)) // a bytes.Buffer does not fail
	return []byte(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key><string>` + Label + `</string>
	<key>ProgramArguments</key><array><string>` + esc.String() + `</string></array>
	<key>RunAtLoad</key><true/>
	<key>ProcessType</key><string>Interactive</string>
</dict>
</plist>
`)
}

// Register makes the app start at login on goos (runtime.GOOS), once per
// config directory: on darwin, when exe is an installed app's binary
// (…/X.app/Contents/MacOS/…), it writes home's Library/LaunchAgents/
// Label.plist naming exe and marks configDir. It reports whether it wrote
// the plist. Other systems: nothing (their installers do it).
func Register(goos, home, configDir, exe string) (bool, error) {
	if goos != "darwin" || !inAppBundle(exe) {
		return false, nil
	}
	done := filepath.Join(configDir, doneFile)
	if _, err := os.Stat(done); err == nil {
		return false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	dir := filepath.Join(home, "Library", "LaunchAgents")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("autostart: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, Label+".plist"), Plist(exe), 0o644); err != nil {
		return false, fmt.Errorf("autostart: %w", err)
	}
	if err := os.MkdirAll(configDir, 0o700); err != nil {
		return true, fmt.Errorf("autostart: %w", err)
	}
	return true, os.WriteFile(done, []byte(exe+"\n"), 0o600)
}

// inAppBundle reports whether exe runs from an app bundle: a binary run from
// a build directory (go run, tests) must not register itself at login.
func inAppBundle(exe string) bool {
	return strings.Contains(filepath.ToSlash(exe), ".app/Contents/MacOS/")
}
