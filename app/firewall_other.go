//go:build !windows

package app

import "errors"

// errNoFirewall: the doctor checks no firewall on this OS.
var errNoFirewall = errors.New("no firewall check on this OS")

func firewallState() (fwState, error) { return fwState{}, errNoFirewall }
