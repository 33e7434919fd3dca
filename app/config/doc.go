// Package config is Homering's settings: one Config struct, Default() with
// the reason for every value, JSON load and save in the per-OS config
// directory, and Validate with one sentence per wrong field.
//
// # Directory
//
// Dir resolves, in order: $HOMERING_HOME; then the OS's user config
// directory + "/homering" (Linux $XDG_CONFIG_HOME or ~/.config, macOS
// ~/Library/Application Support, Windows %AppData%). The directory holds
// config.json, the identity (key.pem, cert.pem), paired.json and the per-run
// api.json; it is created 0700 and every file in it is 0600.
//
// # File
//
// config.json is the Config as JSON with durations written like "6s". A
// missing file means Default(); unknown fields are ignored so an older build
// can read a newer file; "version" guards incompatible changes.
package config
