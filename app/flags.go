package app

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
)

// newFlags is the flag set of subcommand name: its errors and its help
// (usage, then the flags) go to e.stderr.
func newFlags(e env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprint(e.stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// isHelpFlag reports whether arg asks for help, as the flag package reads it.
func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "--h"
}

// helpRequested reports whether a command's args ask for help: a help flag
// anywhere before "--", which is where the flag package (and
// parseInterspersed) would meet it.
func helpRequested(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if isHelpFlag(a) {
			return true
		}
	}
	return false
}

// parseFlags parses fs over args. ok is false with the exit status to
// return: 0 after -h, 2 after a bad flag (fs has said what was wrong).
func parseFlags(fs *flag.FlagSet, args []string) (exit int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	return 0, true
}

// reportJSON prints v indented to e.stdout for `homering NAME --json` and
// returns the exit status: 1, with the error on e.stderr, when it fails.
func reportJSON(e env, name string, v any) int {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(e.stderr, "homering %s: %v\n", name, err)
		return 1
	}
	return 0
}

// parseInterspersed parses fs over args while letting flags stand before or
// after the positional arguments (homering inspect m.gguf --json), which the
// flag package alone does not. It returns the positional arguments, or
// ok=false with the exit status to return (0 after -h, 2 after a bad flag).
func parseInterspersed(fs *flag.FlagSet, args []string) (positional []string, exit int, ok bool) {
	for {
		if exit, ok := parseFlags(fs, args); !ok {
			return nil, exit, false
		}
		if fs.NArg() == 0 {
			return positional, 0, true
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
