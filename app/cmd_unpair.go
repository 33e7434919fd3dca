package app

import (
	"context"
	"fmt"
)

// cmdUnpair forgets a paired device here, and there when it is reachable.
func cmdUnpair(ctx context.Context, e env) int {
	if len(e.args) != 1 {
		fmt.Fprintln(e.stderr, "Usage: homering unpair DEVICE   (its ID, short ID, name or address)")
		return 2
	}
	c, _, err := agentClient()
	if err != nil {
		return fail(e.stderr, err)
	}
	p, err := c.Unpair(ctx, e.args[0])
	if err != nil {
		return fail(e.stderr, err)
	}
	fmt.Fprintf(e.stdout, "Unpaired %s (%s). It can no longer connect to this device.\n", orDash(p.Name), p.ID)
	return 0
}
