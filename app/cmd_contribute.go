package app

import (
	"context"
	"errors"
	"fmt"

	"homering/app/api/client"
	"homering/app/config"
)

const contributeUsage = `Usage: homering contribute on|off

Shares this machine with paired devices (on) or stops (off): through the
running agent, or saved for its next start when none runs.
`

// cmdContribute turns contributing on or off, through the agent when it runs
// or in config.json otherwise.
func cmdContribute(ctx context.Context, e env) int {
	fs := newFlags(e, "contribute", contributeUsage)
	if exit, ok := parseFlags(fs, e.args); !ok {
		return exit
	}
	if fs.NArg() != 1 || (fs.Arg(0) != "on" && fs.Arg(0) != "off") {
		fs.Usage()
		return 2
	}
	e.args = fs.Args()
	on := e.args[0] == "on"
	c, dir, err := agentClient()
	if err == nil {
		if _, err = c.SetContribute(ctx, on); err == nil {
			fmt.Fprintf(e.stdout, "Contribute is %s.\n", e.args[0])
			return 0
		}
	}
	if !errors.Is(err, client.ErrNoAgent) {
		return fail(e.stderr, err)
	}
	cfg, err := config.Load(dir)
	if err != nil {
		return fail(e.stderr, err)
	}
	cfg.Contribute = on
	if err := config.Save(dir, cfg); err != nil {
		return fail(e.stderr, err)
	}
	fmt.Fprintf(e.stdout, "Contribute is %s (saved; the agent is not running and will use it when it starts).\n", e.args[0])
	return 0
}
