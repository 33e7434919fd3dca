package app

import (
	"errors"
	"flag"
)

// parseInterspersed parses fs over args while letting flags stand before or
// after the positional arguments (homering inspect m.gguf --json), which the
// flag package alone does not. It returns the positional arguments, or
// ok=false with the exit status to return (0 after -h, 2 after a bad flag).
func parseInterspersed(fs *flag.FlagSet, args []string) (positional []string, exit int, ok bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0, false
			}
			return nil, 2, false
		}
		if fs.NArg() == 0 {
			return positional, 0, true
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
