package app

import (
	"context"
	"errors"
	"fmt"

	"homering/app/api/client"
	"homering/app/config"
)

// cmdContribute turns contributing on or off, through the agent when it runs
// or in config.json otherwise.
func cmdContribute(ctx context.Context, e env) int {
	if len(e.args) != 1 || (e.args[0] != "on" && e.args[0] != "off") {
		fmt.Fprintln(e.stderr, "Usage: homering contribute on|off")
		return 2
	}
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
