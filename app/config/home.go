package config

import (
	"os"
	"path/filepath"
	"strings"
)

// ExpandHome turns a leading ~ (alone, or before / or \) into the home
// folder, as a shell would: a person types ~/models for the model folder.
// Anything else, and any path when the home folder is unknown, is returned
// as it is.
func ExpandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") && !strings.HasPrefix(p, `~\`) {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return p
	}
	return filepath.Join(home, p[1:])
}
