package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"homering/app/api/apitype"
	"homering/app/config"
	"homering/app/problem"
)

// damagedSuffix names a config file the agent could not read and set
// aside: config.json.damaged.
const damagedSuffix = ".damaged"

// setAside handles a config file (config.json, settings.json, paired.json)
// that load could not read at the agent's start: the agent starts on the
// defaults rather than not at all, and the file is renamed to
// NAME.damaged, so that no later save writes over what the person may want
// back and the next start does not stumble on it again. It returns the
// problem that says so in one sentence, for the Status and stderr.
func setAside(dir, name string, loadErr error) apitype.Problem {
	path := filepath.Join(dir, name)
	why := damage(path, loadErr)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return problem.Make(problem.DamagedFile, problem.Sentence(loadErr.Error()), name)
	}
	kept := name + damagedSuffix
	if err := os.Rename(path, path+damagedSuffix); err != nil {
		// An unwritable folder: the file stays, and the defaults hold for
		// this run only (a save fails and says so).
		return problem.Make(problem.DamagedFile, fmt.Sprintf(
			"%s in %s cannot be used (%s); Homering runs on the defaults until it is fixed.", name, dir, why), name)
	}
	return problem.Make(problem.DamagedFile, fmt.Sprintf(
		"%s in %s cannot be used (%s); Homering started on the defaults and kept the file as %s.", name, dir, why, kept), name)
}

// damage says what is wrong with the file at path in a few words: not
// JSON (where), values out of range (which), or not readable at all.
func damage(path string, loadErr error) string {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return pe.Err.Error()
		}
		return err.Error()
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "it is not valid JSON: " + err.Error()
	}
	if _, rest, ok := strings.Cut(loadErr.Error(), config.ErrInvalid.Error()+": "); ok {
		return strings.TrimSuffix(rest, ".")
	}
	return "its contents are not what this version of Homering writes"
}

// writableDir checks at the agent's start that the config directory can be
// written: the agent writes its address there (api.json) for the CLI and
// the tray, and its identity, pairings and conversations. One sentence
// when it cannot, rather than the first write's error further on.
func writableDir(dir string) error {
	err := os.MkdirAll(dir, 0o700)
	if err == nil {
		var f *os.File
		if f, err = os.CreateTemp(dir, ".write-check-*"); err == nil {
			err = errors.Join(f.Close(), os.Remove(f.Name()))
		}
	}
	if err == nil {
		return nil
	}
	why := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		why = pe.Err.Error()
	}
	return fmt.Errorf("the config folder %s cannot be written (%s); make it writable, or start Homering with %s set to a folder that is", dir, why, config.EnvHome)
}
