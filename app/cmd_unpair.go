package app

import (
	"context"
	"fmt"
)

const unpairUsage = `Usage: homering unpair DEVICE

Forgets a paired device (DEVICE: its ID, short ID, name or address) on this
device, and on that one too when it is reachable.
`

// cmdUnpair forgets a paired device here, and there when it is reachable.
func cmdUnpair(ctx context.Context, e env) int {
	fs := newFlags(e, "unpair", unpairUsage)
	if exit, ok := parseFlags(fs, e.args); !ok {
		return exit
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	c, _, err := agentClient()
	if err != nil {
		return fail(e.stderr, err)
	}
	p, err := c.Unpair(ctx, fs.Arg(0))
	if err != nil {
		return fail(e.stderr, err)
	}
	fmt.Fprintf(e.stdout, "Unpaired %s (%s). It can no longer connect to this device.\n", orDash(p.Name), p.ID)
	return 0
}
